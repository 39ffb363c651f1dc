// The cross-attention of one translation as a self-contained SVG heatmap: one panel per decoder layer,
// source tokens along the top, output tokens down the side, darker = more attention.
#pragma once

#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

namespace translate {

// layers[l] is [out_tokens.size(), src_tokens.size()] (rows sum to 1). Returns the SVG text.
std::string attention_svg(const std::string& title, const std::vector<std::string>& src_tokens,
                          const std::vector<std::string>& out_tokens, const std::vector<xt::xarray<float>>& layers);

// Writes attention_svg(...) to path; throws std::runtime_error naming the path if it cannot.
void write_attention_svg(const std::string& path, const std::string& title, const std::vector<std::string>& src_tokens,
                         const std::vector<std::string>& out_tokens, const std::vector<xt::xarray<float>>& layers);

}  // namespace translate
