// Escaping text for the example programs' self-contained pages: HTML (train_imdb's explain and
// report) and SVG (train_translate's attention map) share XML's five special characters.
#pragma once

#include <string>
#include <string_view>

namespace examples::markup {

// Text for element content and attribute values: & < > " ' become entities.
std::string escape(std::string_view text);

}  // namespace examples::markup
