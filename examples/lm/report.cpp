#include "examples/lm/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "examples/common/charts.hpp"
#include "examples/common/html.hpp"
#include "examples/lm/config.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace lm {

namespace fs = std::filesystem;
using examples::charts::line_chart;
using examples::charts::number;
using examples::charts::report_page;
using examples::charts::Series;
using nlohmann::json;

namespace {

// What the page shows of metrics.jsonl.
struct Curves {
  Series train_loss{"train_loss", "train (per log window)", "#9fb7d9", {}, false};
  Series valid_loss{"valid_loss", "validation", "#d9534f", {}, true};
  Series valid_ppl{"valid_ppl", "validation", "#d9534f", {}, true};
  std::optional<double> add_one_ppl, kn_ppl, add_one_sample_ppl, kn_sample_ppl, train_seconds, wall_seconds;
  std::optional<double> final_ppl, best_step, valid_reviews, sample_reviews;
  std::int64_t last_step = 0;
  std::string rows;  // a table row per validation
  // The validations scored a subset of the validation reviews.
  bool sampled() const { return valid_reviews && sample_reviews && *sample_reviews < *valid_reviews; }
};

Curves read_curves(const tapegrad::train::RunDirectory& run) {
  Curves c;
  for (const json& line : tapegrad::train::read_metrics(run.metrics())) {
    const double step = number(line, "step").value_or(0.0);
    c.last_step = std::max<std::int64_t>(c.last_step, static_cast<std::int64_t>(step));
    if (auto v = number(line, "baseline_add_one_ppl")) c.add_one_ppl = v;
    if (auto v = number(line, "baseline_kneser_ney_ppl")) c.kn_ppl = v;
    if (auto v = number(line, "baseline_add_one_ppl_sample")) c.add_one_sample_ppl = v;
    if (auto v = number(line, "baseline_kneser_ney_ppl_sample")) c.kn_sample_ppl = v;
    if (auto v = number(line, "valid_reviews")) c.valid_reviews = v;
    if (auto v = number(line, "valid_sample_reviews")) c.sample_reviews = v;
    if (line.value("final", false)) {
      c.train_seconds = number(line, "train_seconds");
      c.wall_seconds = number(line, "wall_seconds");
      c.final_ppl = number(line, "final_valid_ppl");
      c.best_step = number(line, "best_step");
      continue;
    }
    const auto loss = number(line, "loss");
    if (const auto ppl = number(line, "valid_ppl")) {
      c.valid_ppl.points.emplace_back(step, *ppl);
      if (const auto vl = number(line, "valid_loss")) c.valid_loss.points.emplace_back(step, *vl);
      c.rows += fmt::format(
          "<tr><td class=num>{}</td><td class=num>{:.4f}</td><td class=num>{:.4f}</td>"
          "<td class=num>{:.2f}</td><td class=num>{:.2f}%</td><td class=num>{:.0f}</td></tr>",
          step, loss.value_or(NAN), number(line, "valid_loss").value_or(NAN), *ppl,
          100.0 * number(line, "valid_acc").value_or(NAN), number(line, "tokens_per_s").value_or(0));
    } else if (loss) {
      c.train_loss.points.emplace_back(step, *loss);
    }
  }
  return c;
}

// The perplexity chart's series: the validations, and the bigram baselines scored on the reviews the
// validations score.
std::vector<Series> perplexity_series(const Curves& c) {
  Series add_one{"add_one", "add-one bigram", "#999999", {}, false};
  Series kneser_ney{"kneser_ney", "Kneser-Ney bigram", "#5cb85c", {}, false};
  std::vector<Series> series = {c.valid_ppl};
  for (auto [s, value] : {std::pair{&add_one, c.sampled() ? c.add_one_sample_ppl : c.add_one_ppl},
                          std::pair{&kneser_ney, c.sampled() ? c.kn_sample_ppl : c.kn_ppl}}) {
    if (!value || c.valid_ppl.points.empty()) continue;
    s->points = {{0.0, *value}, {double(c.last_step), *value}};
    series.push_back(*s);
  }
  return series;
}

// The paragraphs above the charts: the subset, the final perplexity, the baselines and the timing.
std::string summary(const Curves& c) {
  std::string text;
  if (c.sampled()) {
    text += fmt::format(
        "<p>Validations during training score a fixed seeded subset of {:.0f} of the {:.0f} validation reviews "
        "(the chart and the table); the best model is then scored on all of them.</p>",
        *c.sample_reviews, *c.valid_reviews);
  }
  if (c.final_ppl && c.best_step) {
    text += fmt::format(
        "<p>Final validation perplexity of the best model (step {:.0f}) on all validation reviews: <b>{:.2f}</b>.</p>",
        *c.best_step, *c.final_ppl);
  }
  if (c.add_one_ppl && c.kn_ppl) {
    text += fmt::format(
        "<p>Bigram baselines on the same validation targets (all validation reviews): add-one {:.2f}, "
        "Kneser-Ney {:.2f}{}.</p>",
        *c.add_one_ppl, *c.kn_ppl,
        c.sampled() && c.add_one_sample_ppl && c.kn_sample_ppl
            ? fmt::format("; on the subset: add-one {:.2f}, Kneser-Ney {:.2f}", *c.add_one_sample_ppl, *c.kn_sample_ppl)
            : std::string());
  }
  if (c.train_seconds) {
    text += fmt::format("<p>training: {}", examples::charts::duration(*c.train_seconds));
    if (c.wall_seconds) {
      text += fmt::format(", wall (data, baselines and validations included): {}",
                          examples::charts::duration(*c.wall_seconds));
    }
    text += "</p>";
  }
  return text;
}

}  // namespace

std::string report_html(const fs::path& run_dir) {
  const tapegrad::train::RunDirectory run(run_dir);
  const json saved = run.read_config();
  const Config config = config_from_json(saved);
  const Curves curves = read_curves(run);
  const std::string body = fmt::format(
      R"(<h1>train_lm run: {run}</h1>
<p>{objective} objective{model}; loss is the mean negative log-likelihood per target token (nats), perplexity its exp.</p>
{summary}
<div class="charts">{loss_chart}{ppl_chart}</div>
<h2>Validations</h2>
<table><tr><th>step</th><th>train loss</th><th>valid loss</th><th>valid perplexity</th><th>next-token accuracy</th><th>tokens/s</th></tr>{rows}</table>
<h2>Settings</h2><table>{settings}</table>
<script type="application/json" id="report-data">{data}</script>)",
      fmt::arg("run", examples::html::escape(run_dir.string())),
      fmt::arg("objective", examples::html::escape(config.objective)),
      fmt::arg("model", config.objective == "causal" ? fmt::format(" ({})", examples::html::escape(config.arch))
                                                     : std::string()),
      fmt::arg("summary", summary(curves)),
      fmt::arg("loss_chart", line_chart("loss-chart", "step", "loss", {curves.train_loss, curves.valid_loss})),
      fmt::arg("ppl_chart", line_chart("ppl-chart", "step", "perplexity", perplexity_series(curves))),
      fmt::arg("rows", curves.rows), fmt::arg("settings", examples::charts::settings_rows(saved)),
      fmt::arg("data", examples::html::script_json({{"validations", curves.valid_ppl.points.size()}})));
  return report_page("train_lm report", body);
}

fs::path write_report(const fs::path& run_dir) { return examples::charts::write_report(run_dir, report_html); }

}  // namespace lm
