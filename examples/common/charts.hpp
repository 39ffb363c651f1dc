// Line charts as inline SVG for the example programs' report pages (train_imdb's and
// train_translate's curves), durations as those pages print them, and the frame of such a page.
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace examples::charts {

// One curve: its points (x, y) in order.
struct Series {
  std::string id, label, color;
  std::vector<std::pair<double, double>> points;
  bool markers = true;  // a circle per point (class "pt") with the value as its tooltip

  // Adds the point (x, scale * line[key]) when a metrics.jsonl line has a number under key.
  void add(double x, const nlohmann::json& line, const char* key, double scale = 1.0);
};

// A line chart with axes, about five round ticks on each, axis labels and a legend below. Each series
// is a <g class="series" data-series=id data-points=n> (what the browser tests count); with no point
// at all the chart says "no data yet".
std::string line_chart(const std::string& id, const std::string& x_label, const std::string& y_label,
                       const std::vector<Series>& series);

// The number under key in a metrics.jsonl line; none if absent or null (how JSON writes NaN).
std::optional<double> number(const nlohmann::json& line, const char* key);

// A run's metrics.jsonl lines as a page charts them: those with a number under x_key ("epoch", "step"),
// each with that x, in order; the test line (split "test") apart.
struct ChartLines {
  std::vector<std::pair<double, nlohmann::json>> points;
  std::optional<nlohmann::json> test;
};
ChartLines chart_lines(const std::vector<nlohmann::json>& metrics, const char* x_key);

// A curve and where its points come from: the number under key, times scale, of each line of its kind.
struct Curve {
  Series* series;
  const char* key;
  double scale = 1.0;
};

// Adds the points of lines to curves: an evaluation's line (one that has eval_key) to each of
// `evaluation`, any other (a log window's) to each of `window`. Returns the evaluations' lines, in order.
std::vector<nlohmann::json> add_points(const ChartLines& lines, const char* eval_key,
                                       std::initializer_list<Curve> window, std::initializer_list<Curve> evaluation);

// "4.21 s", "37.5 s", "12:34", "1:02:03".
std::string duration(double seconds);

// A table's rows of a run's config.json: a key and its value each ("version" too).
std::string settings_rows(const nlohmann::json& config);

// A training report page (train_lm's and train_translate's): charts side by side and tables with
// right-aligned numbers. The body's <script id="report-data"> must hold JSON with "validations", which
// the page records in document.body.dataset for the tests, beside dataset.ok once its script ran.
std::string report_page(std::string_view title, std::string_view body);

/// Where a run's report page goes: run_dir/report.html.
inline constexpr const char* kReportFile = "report.html";

/// Writes page_html(run_dir), a program's report page of the run, to run_dir/report.html (atomically)
/// and returns its path.
std::filesystem::path write_report(const std::filesystem::path& run_dir,
                                   const std::function<std::string(const std::filesystem::path&)>& page_html);

}  // namespace examples::charts
