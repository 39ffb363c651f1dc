#include "examples/translate/attention_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "examples/common/markup.hpp"

namespace translate {

namespace {

constexpr int kCell = 22, kLeft = 90, kTop = 110, kGap = 40, kTitle = 24;

using examples::markup::escape;

}  // namespace

std::string attention_svg(const std::string& title, const std::vector<std::string>& src_tokens,
                          const std::vector<std::string>& out_tokens, const std::vector<xt::xarray<float>>& layers) {
  const std::size_t rows = out_tokens.size(), cols = src_tokens.size();
  for (const auto& m : layers) {
    if (m.dimension() != 2 || m.shape(0) != rows || m.shape(1) != cols)
      throw std::invalid_argument(fmt::format("attention_svg: a map is not [{}, {}]", rows, cols));
  }
  const int panel = kLeft + static_cast<int>(cols) * kCell;
  // Wide enough for the title too (about 8.5 px per character at 14 px monospace).
  const int width = std::max(static_cast<int>(layers.size()) * (panel + kGap), static_cast<int>(title.size()) * 9 + 8);
  const int height = kTitle + kTop + static_cast<int>(rows) * kCell + 10;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"monospace\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"4\" y=\"16\" font-size=\"14\">{}</text>\n",
      width, height, escape(title));
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const int x0 = static_cast<int>(l) * (panel + kGap) + kLeft, y0 = kTitle + kTop;
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">decoder layer {}</text>\n", x0, kTitle + 14, l);
    for (std::size_t c = 0; c < cols; ++c) {
      const int x = x0 + static_cast<int>(c) * kCell + kCell / 2;
      s += fmt::format("<text x=\"{}\" y=\"{}\" transform=\"rotate(-60 {} {})\">{}</text>\n", x, y0 - 4, x, y0 - 4,
                       escape(src_tokens[c]));
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const int y = y0 + static_cast<int>(r) * kCell;
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", x0 - 4, y + kCell - 6,
                       escape(out_tokens[r]));
      for (std::size_t c = 0; c < cols; ++c) {
        const float w = std::clamp(layers[l](r, c), 0.0f, 1.0f);
        s += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#08306b\" fill-opacity=\"{:.3f}\" "
            "stroke=\"#ddd\"><title>{} -> {}: {:.3f}</title></rect>\n",
            x0 + static_cast<int>(c) * kCell, y, kCell, kCell, w, escape(out_tokens[r]), escape(src_tokens[c]), w);
      }
    }
  }
  s += "</svg>\n";
  return s;
}

void write_attention_svg(const std::string& path, const std::string& title, const std::vector<std::string>& src_tokens,
                         const std::vector<std::string>& out_tokens, const std::vector<xt::xarray<float>>& layers) {
  const std::string svg = attention_svg(title, src_tokens, out_tokens, layers);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot open for writing", path));
  f << svg;
  if (!f.flush()) throw std::runtime_error(fmt::format("{}: write failed", path));
}

}  // namespace translate
