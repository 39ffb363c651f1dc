#include "examples/imdb/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "examples/imdb/html.hpp"
#include "examples/imdb/model.hpp"
#include "tapegrad/nn/positional_encoding.hpp"

namespace imdb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Series {
  std::string id, label, color;
  std::vector<std::pair<double, double>> points;
  bool markers = true;  // a circle per point (class "pt")
};

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

// A line chart as inline SVG, with axes, ticks, axis labels and a legend. Each series is a
// <g class="series" data-series=id data-points=n>.
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
                     top + ph + 34, html::escape(x_label));
  svg += fmt::format(
      R"SVG(<text x="14" y="{:.1f}" text-anchor="middle" font-size="12" transform="rotate(-90 14 {:.1f})">{}</text>)SVG",
      top + ph / 2, top + ph / 2, html::escape(y_label));

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
            sx(x), sy(y), s.color, html::escape(s.label), y, x);
      }
    }
    svg += "</g>";
    svg += fmt::format(
        R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"/><text x="{:.1f}" y="{:.1f}" font-size="11">{}</text>)",
        legend_x, legend_x + 20, legend_y, legend_y, s.color, legend_x + 25, legend_y + 4, html::escape(s.label));
    legend_x += 34 + 6.2 * static_cast<double>(s.label.size());
  }
  return svg + "</svg>";
}

std::optional<double> number(const json& line, const char* key) {
  const auto it = line.find(key);
  if (it == line.end() || !it->is_number()) return std::nullopt;  // NaN is written as null
  return it->get<double>();
}

std::string duration(double seconds) {
  if (seconds < 10) return fmt::format("{:.2f} s", seconds);
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto s = static_cast<long>(std::lround(seconds));
  return s < 3600 ? fmt::format("{}:{:02}", s / 60, s % 60)
                  : fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

constexpr const char* kStyle = R"(
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; }
.cols { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
#pe { image-rendering: pixelated; border: 1px solid #ccc; max-width: 100%; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
)";

constexpr const char* kScript = R"JS(
(function () {
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var canvas = document.getElementById('pe');
  if (canvas && D.pe) {
    var rows = D.pe.positions, cols = D.pe.dims, v = D.pe.values;
    canvas.width = cols;
    canvas.height = rows;
    var cellW = Math.max(2, Math.floor(380 / cols)), cellH = Math.max(1, Math.min(cellW, Math.floor(380 / rows)));
    canvas.style.width = (cols * cellW) + 'px';
    canvas.style.height = (rows * cellH) + 'px';
    var ctx = canvas.getContext('2d'), img = ctx.createImageData(cols, rows);
    var max = 0;
    v.forEach(function (x) { max = Math.max(max, Math.abs(x)); });
    for (var i = 0; i < rows * cols; ++i) {
      // Diverging: red above zero, blue below, white at zero.
      var a = Math.max(-1, Math.min(1, v[i] / (max || 1))), fade = Math.round(255 * (1 - Math.abs(a)));
      img.data[4 * i] = a >= 0 ? 255 : fade;
      img.data[4 * i + 1] = fade;
      img.data[4 * i + 2] = a <= 0 ? 255 : fade;
      img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    document.getElementById('pe-note').textContent =
        rows + ' positions (down) \u00d7 ' + cols + ' dimensions (across); red = +' + max.toFixed(2) +
        ', blue = \u2212' + max.toFixed(2) + ', white = 0';
    document.body.dataset.pePositions = String(rows);
    document.body.dataset.peDims = String(cols);
  }
  document.body.dataset.epochs = String(D.epochs);
  document.body.dataset.ok = '1';
})();
)JS";

}  // namespace

std::string report_html(const fs::path& run_dir) {
  const Config config = read_config(run_dir / kConfigFile);
  const json config_json = to_json(config);

  Series loss_window{"train_loss_steps", "train (per log window)", "#9fb7d9", {}, false};
  Series acc_window{"train_acc_steps", "train (per log window)", "#9fb7d9", {}, false};
  Series loss_train{"train_loss", "train (epoch)", "#1565c0", {}, true};
  Series acc_train{"train_acc", "train (epoch)", "#1565c0", {}, true};
  Series loss_valid{"valid_loss", "validation", "#e65100", {}, true};
  Series acc_valid{"valid_acc", "validation", "#e65100", {}, true};
  std::vector<json> epochs;
  std::optional<json> test;
  std::ifstream in(run_dir / kMetricsFile);
  for (std::string text; std::getline(in, text);) {
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded() || !line.is_object()) continue;  // a line cut short by a crash
    if (line.value("split", "") == "test") {
      test = line;
      continue;
    }
    const auto epoch = number(line, "epoch");
    if (!epoch) continue;
    const bool per_epoch = line.contains("valid_loss");
    const auto loss = number(line, "loss"), acc = number(line, "acc");
    if (!per_epoch) {
      if (loss) loss_window.points.emplace_back(*epoch, *loss);
      if (acc) acc_window.points.emplace_back(*epoch, 100.0 * *acc);
      continue;
    }
    epochs.push_back(line);
    if (loss) loss_train.points.emplace_back(*epoch, *loss);
    if (acc) acc_train.points.emplace_back(*epoch, 100.0 * *acc);
    if (const auto v = number(line, "valid_loss")) loss_valid.points.emplace_back(*epoch, *v);
    if (const auto v = number(line, "valid_acc")) acc_valid.points.emplace_back(*epoch, 100.0 * *v);
  }

  // Timing and throughput, per epoch and in total.
  std::string epoch_rows;
  double previous_elapsed = 0.0, tokens = 0.0, seconds = 0.0;
  for (const auto& e : epochs) {
    const double elapsed = number(e, "elapsed").value_or(previous_elapsed);
    const double rate = number(e, "tokens_per_s").value_or(0.0);
    const auto cell = [&](const char* key, double scale, const char* unit) {
      const auto v = number(e, key);
      return v ? fmt::format("{:.4g}{}", scale * *v, unit) : std::string("&ndash;");
    };
    epoch_rows += fmt::format(
        "<tr class=\"epoch-row\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0f}</td></tr>\n",
        e.value("epoch", 0), cell("loss", 1, ""), cell("acc", 100, "%"), cell("valid_loss", 1, ""),
        cell("valid_acc", 100, "%"), duration(elapsed - previous_elapsed), rate);
    tokens += rate * (elapsed - previous_elapsed);
    seconds += elapsed - previous_elapsed;
    previous_elapsed = elapsed;
  }
  std::string summary = fmt::format("<tr><th>epochs logged</th><td>{} of {}</td></tr>", epochs.size(), config.epochs);
  if (!epochs.empty()) {
    summary += fmt::format("<tr><th>steps</th><td>{}</td></tr>", epochs.back().value("step", 0));
    summary += fmt::format("<tr><th>training time</th><td>{} (validation not included)</td></tr>", duration(seconds));
    summary += fmt::format("<tr><th>throughput</th><td>{:.0f} real tokens/s in training</td></tr>",
                           tokens / std::max(seconds, 1e-9));
  }
  if (test) {
    const auto acc = number(*test, "test_acc"), loss = number(*test, "test_loss");
    summary +=
        fmt::format("<tr><th>test</th><td id=\"test-score\">accuracy {} (loss {}) with the model of epoch {}</td></tr>",
                    acc ? fmt::format("{:.2f}%", 100.0 * *acc) : "&ndash;",
                    loss ? fmt::format("{:.4f}", *loss) : "&ndash;", test->value("best_epoch", 0));
  } else {
    summary += "<tr><th>test</th><td>not evaluated (the run did not finish)</td></tr>";
  }

  std::string config_rows;
  for (const auto& [key, value] : config_json.items()) {
    config_rows += fmt::format("<tr><th><code>--{}</code></th><td>{}</td></tr>\n", html::escape(key),
                               html::escape(value.is_string() ? value.get<std::string>() : value.dump()));
  }

  // The table the model added to its embeddings: the sinusoidal one rebuilt by the same module, or the
  // learned one read from the trained model.
  json data;
  data["epochs"] = epochs.size();
  std::string pe_title;
  const auto table = [&](const xt::xarray<float>& pe, std::size_t positions, std::size_t dims) {
    json values = json::array();
    for (std::size_t i = 0; i < positions * dims; ++i) values.push_back(html::round_significant(pe.data()[i], 3));
    data["pe"] = {{"positions", positions}, {"dims", dims}, {"values", std::move(values)}};
  };
  const auto max_len = static_cast<std::size_t>(config.max_len), d = static_cast<std::size_t>(config.d_model);
  if (config.pos == "sinusoidal") {
    pe_title = "Sinusoidal positional encoding";
    tapegrad::nn::SinusoidalPositionalEncoding<float> encoding(d, max_len, /*batch_first=*/true);
    table(encoding.pe.data(), max_len, d);
  } else if (fs::exists(run_dir / kModelFile) && fs::exists(run_dir / kVocabFile)) {
    pe_title = "Learned positional embedding (from model.safetensors)";
    const LoadedRun run = load_run(run_dir);
    table(run.model->learned->weight.data(), max_len, d);
  }
  const std::string pe_section =
      pe_title.empty()
          ? "<h2>Positional embedding</h2><p class=\"note\">learned, and no model.safetensors yet</p>"
          : fmt::format(R"(<h2>{}</h2><p class="note" id="pe-note"></p><canvas id="pe"></canvas>)", pe_title);

  const std::string x_label = "epoch";
  std::string body = fmt::format(
      R"(<h1>Training report</h1>
<p class="note">run <code>{run}</code> &middot; {layers} layer(s), d_model {d}, {heads} heads, {pooling} pooling,
{pos} positions &middot; from <code>metrics.jsonl</code> and <code>config.json</code></p>
<h2>Curves</h2>
<div class="charts"><div><b>Loss</b> (cross-entropy per review)<br>{loss_chart}</div>
<div><b>Accuracy</b> (%)<br>{acc_chart}</div></div>
<p class="note">Light line: the training windows of <code>--log-every</code> steps (dropout on); points: the mean over
each epoch, and the validation split after each epoch (eval mode).</p>
<div class="cols"><div><h2>Timing and throughput</h2><table>{summary}</table>
<table style="margin-top:1em"><thead><tr><th>epoch</th><th>train loss</th><th>train acc</th><th>valid loss</th>
<th>valid acc</th><th>time</th><th>tokens/s</th></tr></thead><tbody>{epoch_rows}</tbody></table></div>
<div style="max-width: 400px">{pe_section}</div></div>
<h2>Configuration</h2><table id="config">{config_rows}</table>
<script type="application/json" id="report-data">{data}</script>)",
      fmt::arg("run", html::escape(run_dir.string())), fmt::arg("layers", config.layers), fmt::arg("d", config.d_model),
      fmt::arg("heads", config.heads), fmt::arg("pooling", html::escape(config.pooling)),
      fmt::arg("pos", html::escape(config.pos)),
      fmt::arg("loss_chart", line_chart("loss-chart", x_label, "loss", {loss_window, loss_train, loss_valid})),
      fmt::arg("acc_chart", line_chart("acc-chart", x_label, "accuracy (%)", {acc_window, acc_train, acc_valid})),
      fmt::arg("summary", summary), fmt::arg("epoch_rows", epoch_rows), fmt::arg("config_rows", config_rows),
      fmt::arg("pe_section", pe_section), fmt::arg("data", html::script_json(data)));
  return html::page("train_imdb report", kStyle, body, kScript);
}

fs::path write_report(const fs::path& run_dir) {
  const fs::path path = run_dir / kReportFile;
  html::write_file(path, report_html(run_dir));
  return path;
}

}  // namespace imdb
