#include "examples/common/charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "examples/common/html.hpp"
#include "examples/common/markup.hpp"
#include "tapegrad/io/atomic_file.hpp"

namespace examples::charts {

namespace {

// About five round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 5.0, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * magnitude;
    if (span / step <= 6.0) break;
  }
  std::vector<double> out;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) out.push_back(t);
  return out;
}

std::string tick_label(double v) { return fmt::format("{:.4g}", std::abs(v) < 1e-12 ? 0.0 : v); }

}  // namespace

std::string line_chart(const std::string& id, const std::string& x_label, const std::string& y_label,
                       const std::vector<Series>& series) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  const double width = 520, height = 320, left = 62, right = 16, top = 16, bottom = 68;
  std::string svg = fmt::format(R"(<svg id="{}" class="chart" width="{}" height="{}" viewBox="0 0 {} {}">)", id, width,
                                height, width, height);
  if (!std::isfinite(x0)) {
    return svg + fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" fill="#888">no data yet</text></svg>)",
                             width / 2, height / 2);
  }
  x0 = std::min(x0, 0.0);
  if (x1 - x0 < 1e-9) x1 = x0 + 1;
  if (y1 - y0 < 1e-9) y0 -= 0.5, y1 += 0.5;
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad, y1 += pad;
  const double pw = width - left - right, ph = height - top - bottom;
  const auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  const auto sy = [&](double y) { return top + (1.0 - (y - y0) / (y1 - y0)) * ph; };

  for (const double t : ticks(y0, y1)) {
    svg += fmt::format(
        R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#eee"/><text x="{:.1f}" y="{:.1f}" text-anchor="end" font-size="11" fill="#555">{}</text>)",
        left, left + pw, sy(t), sy(t), left - 5, sy(t) + 4, tick_label(t));
  }
  for (const double t : ticks(x0, x1)) {
    svg += fmt::format(
        R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#bbb"/><text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="11" fill="#555">{}</text>)",
        sx(t), sx(t), top + ph, top + ph + 4, sx(t), top + ph + 17, tick_label(t));
  }
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", left, top, pw, ph);
  svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="12">{}</text>)", left + pw / 2,
                     top + ph + 34, markup::escape(x_label));
  svg += fmt::format(
      R"SVG(<text x="14" y="{:.1f}" text-anchor="middle" font-size="12" transform="rotate(-90 14 {:.1f})">{}</text>)SVG",
      top + ph / 2, top + ph / 2, markup::escape(y_label));

  // The legend below the axis label, so it never hides a curve.
  double legend_x = left;
  const double legend_y = height - 10;
  for (const auto& s : series) {
    svg += fmt::format(R"(<g class="series" data-series="{}" data-points="{}">)", s.id, s.points.size());
    std::string path;
    for (const auto& [x, y] : s.points) path += fmt::format("{:.1f},{:.1f} ", sx(x), sy(y));
    svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"/>)", path, s.color,
                       s.markers ? 2 : 1);
    if (s.markers) {
      for (const auto& [x, y] : s.points) {
        svg += fmt::format(
            R"(<circle class="pt" cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}"><title>{}: {:.4g} at {:.4g}</title></circle>)",
            sx(x), sy(y), s.color, markup::escape(s.label), y, x);
      }
    }
    svg += "</g>";
    svg += fmt::format(
        R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"/><text x="{:.1f}" y="{:.1f}" font-size="11">{}</text>)",
        legend_x, legend_x + 20, legend_y, legend_y, s.color, legend_x + 25, legend_y + 4, markup::escape(s.label));
    legend_x += 34 + 6.2 * static_cast<double>(s.label.size());
  }
  return svg + "</svg>";
}

std::optional<double> number(const nlohmann::json& line, const char* key) {
  const auto it = line.find(key);
  if (it == line.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

void Series::add(double x, const nlohmann::json& line, const char* key, double scale) {
  if (const auto v = number(line, key)) points.emplace_back(x, scale * *v);
}

ChartLines chart_lines(const std::vector<nlohmann::json>& metrics, const char* x_key) {
  ChartLines c;
  for (const auto& line : metrics) {
    if (line.value("split", "") == "test") {
      c.test = line;
    } else if (const auto x = number(line, x_key)) {
      c.points.emplace_back(*x, line);
    }
  }
  return c;
}

std::vector<nlohmann::json> add_points(const ChartLines& lines, const char* eval_key,
                                       std::initializer_list<Curve> window, std::initializer_list<Curve> evaluation) {
  std::vector<nlohmann::json> evaluations;
  for (const auto& [x, line] : lines.points) {
    const bool evaluated = line.contains(eval_key);
    if (evaluated) evaluations.push_back(line);
    for (const Curve& c : evaluated ? evaluation : window) c.series->add(x, line, c.key, c.scale);
  }
  return evaluations;
}

std::string duration(double seconds) {
  if (seconds < 10) return fmt::format("{:.2f} s", seconds);
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto s = static_cast<long>(std::lround(seconds));
  return s < 3600 ? fmt::format("{}:{:02}", s / 60, s % 60)
                  : fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string report_page(std::string_view title, std::string_view body) {
  constexpr std::string_view style = R"(
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
)";
  constexpr std::string_view script = R"JS(
(function () {
  var D = JSON.parse(document.getElementById('report-data').textContent);
  document.body.dataset.validations = String(D.validations);
  document.body.dataset.ok = '1';
})();
)JS";
  return html::page(title, style, body, script);
}

std::string settings_rows(const nlohmann::json& config) {
  std::string rows;
  for (const auto& [key, value] : config.items()) {
    rows += fmt::format("<tr><th><code>{}</code></th><td>{}</td></tr>\n", html::escape(key),
                        html::escape(value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return rows;
}

std::filesystem::path write_report(const std::filesystem::path& run_dir,
                                   const std::function<std::string(const std::filesystem::path&)>& page_html) {
  const std::filesystem::path path = run_dir / kReportFile;
  tapegrad::io::write_file_atomically(path, page_html(run_dir));
  return path;
}

}  // namespace examples::charts
