#include "tapegrad/datasets/text/tokenizer.hpp"

namespace tapegrad::datasets {

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  for_each_token(text, [&](std::string_view t) { tokens.emplace_back(t); });
  return tokens;
}

}  // namespace tapegrad::datasets
