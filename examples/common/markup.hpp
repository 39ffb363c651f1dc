// Escaping text for the example programs' self-contained pages: HTML (train_imdb's explain and
// report) and SVG (train_translate's attention map) share XML's five special characters.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace examples::markup {

// text with every character that `replacements` names replaced by its string, the others kept.
std::string replace_each(std::string_view text, std::initializer_list<std::pair<char, std::string_view>> replacements);

// Text for element content and attribute values: & < > " ' become entities.
std::string escape(std::string_view text);

}  // namespace examples::markup
