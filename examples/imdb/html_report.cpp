#include "examples/imdb/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "examples/common/charts.hpp"
#include "examples/imdb/evaluate.hpp"
#include "examples/imdb/html.hpp"
#include "examples/imdb/model.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/train/metrics.hpp"

namespace imdb {

namespace fs = std::filesystem;
using examples::charts::duration;
using examples::charts::line_chart;
using examples::charts::number;
using examples::charts::Series;
using nlohmann::json;

namespace {

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

// What the page shows of metrics.jsonl.
struct Curves {
  Series loss_window{"train_loss_steps", "train (per log window)", "#9fb7d9", {}, false};
  Series acc_window{"train_acc_steps", "train (per log window)", "#9fb7d9", {}, false};
  Series loss_train{"train_loss", "train (epoch)", "#1565c0", {}, true};
  Series acc_train{"train_acc", "train (epoch)", "#1565c0", {}, true};
  Series loss_valid{"valid_loss", "validation", "#e65100", {}, true};
  Series acc_valid{"valid_acc", "validation", "#e65100", {}, true};
  std::vector<json> epochs;
  std::optional<json> test;
};

Curves read_curves(const tapegrad::train::RunDirectory& run) {
  Curves c;
  auto lines = examples::charts::chart_lines(tapegrad::train::read_metrics(run.metrics()), "epoch");
  c.test = std::move(lines.test);
  c.epochs =
      examples::charts::add_points(lines, "valid_loss", {{&c.loss_window, "loss"}, {&c.acc_window, "acc", 100.0}},
                                   {{&c.loss_train, "loss"},
                                    {&c.acc_train, "acc", 100.0},
                                    {&c.loss_valid, "valid_loss"},
                                    {&c.acc_valid, "valid_acc", 100.0}});
  return c;
}

// Timing and throughput, per epoch (rows) and in total (the summary, with the test score).
struct Timing {
  std::string rows, summary;
};

Timing timing_tables(const Curves& c, const Config& config) {
  Timing t;
  double previous_elapsed = 0.0, tokens = 0.0, seconds = 0.0;
  for (const auto& e : c.epochs) {
    const double elapsed = number(e, "elapsed").value_or(previous_elapsed);
    const double rate = number(e, "tokens_per_s").value_or(0.0);
    const auto cell = [&](const char* key, double scale, const char* unit) {
      const auto v = number(e, key);
      return v ? fmt::format("{:.4g}{}", scale * *v, unit) : std::string("&ndash;");
    };
    t.rows += fmt::format(
        "<tr class=\"epoch-row\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0f}</td></tr>\n",
        e.value("epoch", 0), cell("loss", 1, ""), cell("acc", 100, "%"), cell("valid_loss", 1, ""),
        cell("valid_acc", 100, "%"), duration(elapsed - previous_elapsed), rate);
    tokens += rate * (elapsed - previous_elapsed);
    seconds += elapsed - previous_elapsed;
    previous_elapsed = elapsed;
  }
  t.summary = fmt::format("<tr><th>epochs logged</th><td>{} of {}</td></tr>", c.epochs.size(), config.epochs);
  if (!c.epochs.empty()) {
    t.summary += fmt::format("<tr><th>steps</th><td>{}</td></tr>", c.epochs.back().value("step", 0));
    t.summary += fmt::format("<tr><th>training time</th><td>{} (validation not included)</td></tr>", duration(seconds));
    t.summary += fmt::format("<tr><th>throughput</th><td>{:.0f} real tokens/s in training</td></tr>",
                             tokens / std::max(seconds, 1e-9));
  }
  if (!c.test) {
    t.summary += "<tr><th>test</th><td>not evaluated (the run did not finish)</td></tr>";
    return t;
  }
  const auto acc = number(*c.test, "test_acc"), loss = number(*c.test, "test_loss");
  t.summary +=
      fmt::format("<tr><th>test</th><td id=\"test-score\">accuracy {} (loss {}) with the model of epoch {}</td></tr>",
                  acc ? fmt::format("{:.2f}%", 100.0 * *acc) : "&ndash;",
                  loss ? fmt::format("{:.4f}", *loss) : "&ndash;", c.test->value("best_epoch", 0));
  return t;
}

// The temperature as the run's test line records it: a, b and the lengths of the length-dependent one.
std::string temperature_text(const json& line) {
  const auto a = number(line, "temperature_a"), b = number(line, "temperature_b");
  const auto shortest = number(line, "temperature_shortest"), longest = number(line, "temperature_longest");
  if (a && b && shortest && longest) {
    LengthTemperature t;
    t.a = *a;
    t.b = *b;
    t.shortest = *shortest;
    t.longest = *longest;
    if (t.problem().empty()) return describe(t);
  }
  return "-";
}

// Calibration on the test set: the reliability curve (each bin's accuracy against its mean confidence,
// with the run's temperature) beside the diagonal of perfect calibration; and the contrast pairs.
std::string calibration_section(const std::optional<json>& test) {
  if (!test || !test->contains("reliability") || !(*test)["reliability"].is_array()) return "";
  Series diagonal{"perfect", "perfectly calibrated", "#9e9e9e", {{50.0, 50.0}, {100.0, 100.0}}, false};
  Series curve{"reliability", "test set, with the temperature", "#2e7d32", {}, true};
  for (const json& bin : (*test)["reliability"]) {
    if (bin.value("count", 0) == 0) continue;
    const auto confidence = number(bin, "confidence"), accuracy = number(bin, "accuracy");
    if (confidence && accuracy) curve.points.emplace_back(100.0 * *confidence, 100.0 * *accuracy);
  }
  const auto percent = [&](const char* key) {
    const auto v = number(*test, key);
    return v ? fmt::format("{:.2f}%", 100.0 * *v) : std::string("&ndash;");
  };
  // The test line's "<prefix>contrast_pair_acc" and "<prefix>contrast_pairs", as a paragraph.
  const auto pairs_paragraph = [&](const std::string& prefix, const char* id, const char* title) {
    const auto acc = number(*test, (prefix + "contrast_pair_acc").c_str());
    return acc ? fmt::format("<p id=\"{}\">{}: both members right in {:.1f}% of {} pairs.</p>", id, title, 100.0 * *acc,
                             test->value(prefix + "contrast_pairs", 0))
               : std::string();
  };
  const std::string contrast =
      pairs_paragraph("", "contrast-score", "Contrast pairs (examples/imdb/contrast_pairs.tsv)") +
      pairs_paragraph("dev_", "dev-contrast-score",
                      "Development pairs (examples/imdb/contrast_pairs_dev.tsv, where word-order settings are "
                      "chosen)");
  return fmt::format(
      R"(<h2>Calibration</h2><div class="charts"><div><b>Reliability</b> (15 equal-width bins of the confidence)<br>{chart}</div>
<div><table><tr><th>temperature (fitted on validation)</th><td>{temperature}</td></tr>
<tr><th>expected calibration error, test</th><td id="test-ece">{ece} ({ece_raw} without the temperature)</td></tr>
<tr><th>the same, {short_count} reviews under {short_tokens} tokens</th><td>{short_ece} ({short_raw} without)</td></tr></table>
{contrast}</div></div>)",
      fmt::arg("chart", line_chart("reliability-chart", "confidence (%)", "accuracy (%)", {diagonal, curve})),
      fmt::arg("temperature", html::escape(temperature_text(*test))), fmt::arg("ece", percent("test_ece")),
      fmt::arg("ece_raw", percent("test_ece_uncalibrated")),
      fmt::arg("short_count", test->value("test_short_reviews", 0)), fmt::arg("short_tokens", kShortReviewTokens),
      fmt::arg("short_ece", percent("test_short_ece")), fmt::arg("short_raw", percent("test_short_ece_uncalibrated")),
      fmt::arg("contrast", contrast));
}

std::string config_rows(const json& config_json) {
  std::string rows;
  for (const auto& [key, value] : config_json.items()) {
    // Every key is a flag's but the version and what --precision resolved to.
    const bool flag = key != "precision-resolved" && key != "version";
    rows += fmt::format("<tr><th><code>{}{}</code></th><td>{}</td></tr>\n", flag ? "--" : "", html::escape(key),
                        html::escape(value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return rows;
}

// The table the model added to its embeddings: the sinusoidal one rebuilt by the same module, or the
// learned one read from the trained model; its values go to data["pe"].
std::string positional_section(const Config& config, const fs::path& run_dir, json& data) {
  const auto run = run_directory(run_dir);
  std::string title;
  const auto table = [&](const xt::xarray<float>& pe, std::size_t positions, std::size_t dims) {
    json values = json::array();
    for (std::size_t i = 0; i < positions * dims; ++i) values.push_back(html::round_significant(pe.data()[i], 3));
    data["pe"] = {{"positions", positions}, {"dims", dims}, {"values", std::move(values)}};
  };
  const auto max_len = static_cast<std::size_t>(config.max_len), d = static_cast<std::size_t>(config.d_model);
  if (config.pos == "sinusoidal") {
    title = "Sinusoidal positional encoding";
    tapegrad::nn::SinusoidalPositionalEncoding<float> encoding(d, max_len, /*batch_first=*/true);
    table(encoding.pe.data(), max_len, d);
  } else if (fs::exists(run.model()) && fs::exists(run.file(kVocabFile))) {
    title = "Learned positional embedding (from model.safetensors)";
    const LoadedRun loaded = load_run(run_dir);
    table(loaded.model->deep->learned->weight.data(), max_len, d);
  }
  if (title.empty()) return "<h2>Positional embedding</h2><p class=\"note\">learned, and no model.safetensors yet</p>";
  return fmt::format(R"(<h2>{}</h2><p class="note" id="pe-note"></p><canvas id="pe"></canvas>)", title);
}

}  // namespace

std::string report_html(const fs::path& run_dir) {
  const auto run = run_directory(run_dir);
  const Config config = read_config(run);
  const Curves c = read_curves(run);
  const Timing timing = timing_tables(c, config);
  json data;
  data["epochs"] = c.epochs.size();
  const std::string pe_section = positional_section(config, run_dir, data);
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
{calibration_section}
<h2>Configuration</h2><table id="config">{config_rows}</table>
<script type="application/json" id="report-data">{data}</script>)",
      fmt::arg("run", html::escape(run_dir.string())), fmt::arg("layers", config.layers), fmt::arg("d", config.d_model),
      fmt::arg("heads", config.heads), fmt::arg("pooling", html::escape(config.pooling)),
      fmt::arg("pos", html::escape(config.pos)),
      fmt::arg("loss_chart", line_chart("loss-chart", x_label, "loss", {c.loss_window, c.loss_train, c.loss_valid})),
      fmt::arg("acc_chart", line_chart("acc-chart", x_label, "accuracy (%)", {c.acc_window, c.acc_train, c.acc_valid})),
      fmt::arg("summary", timing.summary), fmt::arg("epoch_rows", timing.rows),
      fmt::arg("config_rows", config_rows(to_json(config))), fmt::arg("pe_section", pe_section),
      fmt::arg("calibration_section", calibration_section(c.test)), fmt::arg("data", html::script_json(data)));
  return html::page("train_imdb report", kStyle, body, kScript);
}

fs::path write_report(const fs::path& run_dir) { return examples::charts::write_report(run_dir, report_html); }

}  // namespace imdb
