// The explain page: one self-contained HTML file showing an Explanation (tokens, P(positive), the
// attention of every layer and head, the saliency of every token).
#pragma once

#include <string>

#include "examples/imdb/explain.hpp"

namespace imdb {

// `review` is the text as given (shown escaped); `run_name` says which run the model came from.
std::string explain_html(const Explanation& e, const std::string& review, const std::string& run_name);

}  // namespace imdb
