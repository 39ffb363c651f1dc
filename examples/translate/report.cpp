#include "examples/translate/report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "examples/common/charts.hpp"
#include "examples/common/html.hpp"
#include "examples/translate/config.hpp"
#include "examples/translate/training.hpp"
#include "tapegrad/train/metrics.hpp"

namespace translate {

namespace fs = std::filesystem;
namespace html = examples::html;
using examples::charts::line_chart;
using examples::charts::number;
using examples::charts::report_page;
using examples::charts::Series;
using nlohmann::json;

namespace {

std::string percent_cell(const json& line, const char* key) {
  const auto v = number(line, key);
  return v ? fmt::format("{:.2f}%", 100.0 * *v) : std::string("&ndash;");
}

// What the page shows of metrics.jsonl.
struct Curves {
  Series loss_train{"train_loss", "train (per log window)", "#1565c0", {}, false};
  Series acc_train{"train_acc", "train tokens (per log window)", "#1565c0", {}, false};
  Series loss_valid{"valid_loss", "validation", "#e65100", {}, true};
  Series acc_valid{"valid_acc", "validation tokens", "#e65100", {}, true};
  Series exact_valid{"valid_exact", "validation exact match", "#2e7d32", {}, true};
  std::vector<json> validations;
  std::optional<json> test;
};

Curves read_curves(const tapegrad::train::RunDirectory& run) {
  Curves c;
  auto lines = examples::charts::chart_lines(tapegrad::train::read_metrics(run.metrics()), "step");
  c.test = std::move(lines.test);
  c.validations = examples::charts::add_points(
      lines, "valid_exact", {{&c.loss_train, "loss"}, {&c.acc_train, "acc", 100.0}},
      {{&c.loss_valid, "valid_loss"}, {&c.acc_valid, "valid_acc", 100.0}, {&c.exact_valid, "valid_exact", 100.0}});
  return c;
}

// A table row per validation.
std::string validation_rows(const std::vector<json>& validations) {
  std::string rows;
  double previous_elapsed = 0.0;
  for (const auto& v : validations) {
    const double elapsed = number(v, "elapsed").value_or(previous_elapsed);
    const auto loss = number(v, "loss"), valid_loss = number(v, "valid_loss");
    rows += fmt::format(
        "<tr class=\"validation-row\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{:.0f}</td></tr>\n",
        v.value("step", 0), loss ? fmt::format("{:.4f}", *loss) : "&ndash;", percent_cell(v, "acc"),
        valid_loss ? fmt::format("{:.4f}", *valid_loss) : "&ndash;", percent_cell(v, "valid_acc"),
        percent_cell(v, "valid_exact"), examples::charts::duration(elapsed - previous_elapsed),
        number(v, "tokens_per_s").value_or(0.0));
    previous_elapsed = elapsed;
  }
  return rows;
}

// The summary table: validations, steps, training time and the test score.
std::string summary_rows(const Curves& c, const Config& config) {
  std::string summary =
      fmt::format("<tr><th>validations</th><td>{} (every {} steps)</td></tr>", c.validations.size(), config.eval_every);
  if (!c.validations.empty()) {
    summary +=
        fmt::format("<tr><th>steps</th><td>{} of {}</td></tr>", c.validations.back().value("step", 0), config.steps);
    summary += fmt::format("<tr><th>training time</th><td>{} (validation not included)</td></tr>",
                           examples::charts::duration(number(c.validations.back(), "elapsed").value_or(0.0)));
  }
  if (!c.test) return summary + "<tr><th>test</th><td>not evaluated (the run did not finish)</td></tr>";
  std::string beam;
  if (const auto b = number(*c.test, "test_exact_beam")) {
    beam = fmt::format("; beam {}: {:.2f}%", c.test->value("beam", 0), 100.0 * *b);
  }
  return summary + fmt::format(
                       "<tr><th>test</th><td id=\"test-score\">exact match {} (greedy){} with the model of step "
                       "{}</td></tr>",
                       percent_cell(*c.test, "test_exact"), beam, c.test->value("best_step", 0));
}

}  // namespace

std::string report_html(const fs::path& run_dir) {
  const auto run = run_directory(run_dir);
  const json config_json = run.read_config();
  const Config config = config_from_json(config_json);
  const Curves c = read_curves(run);
  const json data = {{"validations", c.validations.size()}};
  const std::string body = fmt::format(
      R"(<h1>Training report</h1>
<p class="note">run <code>{run}</code> &middot; {direction} &middot; d_model {d}, {heads} heads, {enc}+{dec} layers
&middot; from <code>metrics.jsonl</code> and <code>config.json</code></p>
<h2>Curves</h2>
<div class="charts"><div><b>Loss</b> (cross-entropy per target token, label smoothing included)<br>{loss_chart}</div>
<div><b>Accuracy</b> (%)<br>{acc_chart}</div></div>
<p class="note">Lines: the training windows of <code>--log-every</code> steps (dropout on, teacher forcing); points:
each validation (eval mode): teacher-forced loss and token accuracy, and the share of numbers whose whole greedy
translation is right (exact match).</p>
<h2>Validations</h2><table>{summary}</table>
<table style="margin-top:1em"><thead><tr><th>step</th><th>train loss</th><th>train acc</th><th>valid loss</th>
<th>valid acc</th><th>exact match</th><th>time</th><th>tokens/s</th></tr></thead><tbody>{rows}</tbody></table>
<h2>Configuration</h2><table id="config">{config_rows}</table>
<script type="application/json" id="report-data">{data}</script>)",
      fmt::arg("run", html::escape(run_dir.string())), fmt::arg("direction", html::escape(config.direction)),
      fmt::arg("d", config.d_model), fmt::arg("heads", config.nhead), fmt::arg("enc", config.num_encoder_layers),
      fmt::arg("dec", config.num_decoder_layers),
      fmt::arg("loss_chart", line_chart("loss-chart", "step", "loss", {c.loss_train, c.loss_valid})),
      fmt::arg("acc_chart", line_chart("acc-chart", "step", "accuracy (%)", {c.acc_train, c.acc_valid, c.exact_valid})),
      fmt::arg("summary", summary_rows(c, config)), fmt::arg("rows", validation_rows(c.validations)),
      fmt::arg("config_rows", examples::charts::settings_rows(config_json)), fmt::arg("data", html::script_json(data)));
  return report_page("train_translate report", body);
}

fs::path write_report(const fs::path& run_dir) { return examples::charts::write_report(run_dir, report_html); }

}  // namespace translate
