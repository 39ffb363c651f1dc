#include "examples/lm/report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "examples/common/charts.hpp"
#include "examples/common/html.hpp"
#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace lm {

namespace fs = std::filesystem;
using examples::charts::line_chart;
using examples::charts::number;
using examples::charts::report_page;
using examples::charts::Series;
using nlohmann::json;

std::string report_html(const fs::path& run_dir) {
  const tapegrad::train::RunDirectory run(run_dir);
  const json config = run.read_config();
  Series train_loss{"train_loss", "train (per log window)", "#9fb7d9", {}, false};
  Series valid_loss{"valid_loss", "validation", "#d9534f", {}, true};
  Series valid_ppl{"valid_ppl", "validation", "#d9534f", {}, true};
  Series add_one{"add_one", "add-one bigram", "#999999", {}, false};
  Series kneser_ney{"kneser_ney", "Kneser-Ney bigram", "#5cb85c", {}, false};
  std::optional<double> add_one_ppl, kn_ppl, add_one_sample_ppl, kn_sample_ppl, train_seconds, wall_seconds;
  std::optional<double> final_ppl, best_step, valid_reviews, sample_reviews;
  std::int64_t last_step = 0;
  std::string rows;
  for (const json& line : tapegrad::train::read_metrics(run.metrics())) {
    const double step = number(line, "step").value_or(0.0);
    last_step = std::max<std::int64_t>(last_step, static_cast<std::int64_t>(step));
    if (auto v = number(line, "baseline_add_one_ppl")) add_one_ppl = v;
    if (auto v = number(line, "baseline_kneser_ney_ppl")) kn_ppl = v;
    if (auto v = number(line, "baseline_add_one_ppl_sample")) add_one_sample_ppl = v;
    if (auto v = number(line, "baseline_kneser_ney_ppl_sample")) kn_sample_ppl = v;
    if (auto v = number(line, "valid_reviews")) valid_reviews = v;
    if (auto v = number(line, "valid_sample_reviews")) sample_reviews = v;
    if (line.value("final", false)) {
      train_seconds = number(line, "train_seconds");
      wall_seconds = number(line, "wall_seconds");
      final_ppl = number(line, "final_valid_ppl");
      best_step = number(line, "best_step");
      continue;
    }
    const auto loss = number(line, "loss");
    if (const auto ppl = number(line, "valid_ppl")) {
      valid_ppl.points.emplace_back(step, *ppl);
      if (const auto vl = number(line, "valid_loss")) valid_loss.points.emplace_back(step, *vl);
      rows += fmt::format(
          "<tr><td class=num>{}</td><td class=num>{:.4f}</td><td class=num>{:.4f}</td>"
          "<td class=num>{:.2f}</td><td class=num>{:.2f}%</td><td class=num>{:.0f}</td></tr>",
          step, loss.value_or(NAN), number(line, "valid_loss").value_or(NAN), *ppl,
          100.0 * number(line, "valid_acc").value_or(NAN), number(line, "tokens_per_s").value_or(0));
    } else if (loss) {
      train_loss.points.emplace_back(step, *loss);
    }
  }
  // The chart's baselines are scored on the reviews its validations score.
  const bool sampled = valid_reviews && sample_reviews && *sample_reviews < *valid_reviews;
  std::vector<Series> ppl_series = {valid_ppl};
  for (auto [series, value] : {std::pair{&add_one, sampled ? add_one_sample_ppl : add_one_ppl},
                               std::pair{&kneser_ney, sampled ? kn_sample_ppl : kn_ppl}}) {
    if (!value || valid_ppl.points.empty()) continue;
    series->points = {{0.0, *value}, {double(last_step), *value}};
    ppl_series.push_back(*series);
  }
  std::string settings;
  for (const auto& [key, value] : config.items()) {
    settings += fmt::format("<tr><th>--{}</th><td>{}</td></tr>", examples::html::escape(key),
                            examples::html::escape(value.is_string() ? value.get<std::string>() : value.dump()));
  }
  std::string timing;
  if (train_seconds) timing += fmt::format("<p>training: {}", examples::charts::duration(*train_seconds));
  if (wall_seconds)
    timing +=
        fmt::format(", wall (data, baselines and validations included): {}", examples::charts::duration(*wall_seconds));
  if (!timing.empty()) timing += "</p>";
  std::string baselines;
  if (sampled) {
    baselines += fmt::format(
        "<p>Validations during training score a fixed seeded subset of {:.0f} of the {:.0f} validation reviews "
        "(the chart and the table); the best model is then scored on all of them.</p>",
        *sample_reviews, *valid_reviews);
  }
  if (final_ppl && best_step) {
    baselines += fmt::format(
        "<p>Final validation perplexity of the best model (step {:.0f}) on all validation reviews: <b>{:.2f}</b>.</p>",
        *best_step, *final_ppl);
  }
  if (add_one_ppl && kn_ppl) {
    baselines += fmt::format(
        "<p>Bigram baselines on the same validation targets (all validation reviews): add-one {:.2f}, "
        "Kneser-Ney {:.2f}{}.</p>",
        *add_one_ppl, *kn_ppl,
        sampled && add_one_sample_ppl && kn_sample_ppl
            ? fmt::format("; on the subset: add-one {:.2f}, Kneser-Ney {:.2f}", *add_one_sample_ppl, *kn_sample_ppl)
            : std::string());
  }
  const std::string body = fmt::format(
      R"(<h1>train_lm run: {run}</h1>
<p>{objective} objective{model}; loss is the mean negative log-likelihood per target token (nats), perplexity its exp.</p>
{baselines}{timing}
<div class="charts">{loss_chart}{ppl_chart}</div>
<h2>Validations</h2>
<table><tr><th>step</th><th>train loss</th><th>valid loss</th><th>valid perplexity</th><th>next-token accuracy</th><th>tokens/s</th></tr>{rows}</table>
<h2>Settings</h2><table>{settings}</table>
<script type="application/json" id="report-data">{data}</script>)",
      fmt::arg("run", examples::html::escape(run_dir.string())),
      fmt::arg("objective", examples::html::escape(config.value("objective", std::string("causal")))),
      // A run folder from before --arch has no "arch": a GPT.
      fmt::arg("model", config.value("objective", std::string("causal")) == "causal"
                            ? fmt::format(" ({})", examples::html::escape(config.value("arch", std::string("gpt"))))
                            : std::string()),
      fmt::arg("baselines", baselines), fmt::arg("timing", timing),
      fmt::arg("loss_chart", line_chart("loss-chart", "step", "loss", {train_loss, valid_loss})),
      fmt::arg("ppl_chart", line_chart("ppl-chart", "step", "perplexity", ppl_series)), fmt::arg("rows", rows),
      fmt::arg("settings", settings),
      fmt::arg("data", examples::html::script_json({{"validations", valid_ppl.points.size()}})));
  return report_page("train_lm report", body);
}

fs::path write_report(const fs::path& run_dir) {
  const fs::path path = run_dir / kReportFile;
  tapegrad::io::write_file_atomically(path, report_html(run_dir));
  return path;
}

}  // namespace lm
