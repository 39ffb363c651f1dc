#include "examples/common/markup.hpp"

#include <algorithm>

namespace examples::markup {

std::string replace_each(std::string_view text, std::initializer_list<std::pair<char, std::string_view>> replacements) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto* r = std::find_if(replacements.begin(), replacements.end(), [c](const auto& r) { return r.first == c; });
    if (r == replacements.end()) {
      out += c;
    } else {
      out += r->second;
    }
  }
  return out;
}

std::string escape(std::string_view text) {
  return replace_each(text, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}});
}

}  // namespace examples::markup
