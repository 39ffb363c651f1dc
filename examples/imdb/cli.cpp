#include "examples/imdb/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "examples/common/command_line.hpp"
#include "examples/common/commands.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/imdb/config.hpp"
#include "examples/imdb/data.hpp"
#include "examples/imdb/evaluate.hpp"
#include "examples/imdb/explain.hpp"
#include "examples/imdb/html.hpp"
#include "examples/imdb/html_explain.hpp"
#include "examples/imdb/html_report.hpp"
#include "examples/imdb/model.hpp"
#include "examples/imdb/train.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/progress.hpp"

namespace imdb {

namespace fs = std::filesystem;

namespace {

// --resume: the saved config.json supplies every setting not given on the command line.
Config with_saved_settings(const CLI::App& app, const Config& config) {
  const auto run = run_directory(config.out);
  run.check_resumable({tapegrad::train::RunDirectory::kConfig});
  return examples::with_saved_settings(flags(), app, config, read_config(run));
}

// What evaluate, predict and explain check before they read the run, the flags first: --threads (bounded
// like training's), --precision, and a run folder holding the files load_run reads; then the BLAS threads.
void start_on_run(const std::string& dir, std::int64_t threads, const std::string& precision) {
  if (const auto problem = examples::threads_problem(threads)) throw UsageError(*problem);
  if (const auto problem = examples::subcommand_precision_problem(precision)) throw UsageError(*problem);
  run_directory(dir).check_has(
      {tapegrad::train::RunDirectory::kConfig, kVocabFile, tapegrad::train::RunDirectory::kModel});
  tapegrad::set_num_threads(static_cast<int>(threads));
}

int train_command(const CLI::App& app, Config config, std::ostream& out, std::ostream& err, bool interactive,
                  const Parallel& parallel) {
  if (config.resume && config.overwrite) throw UsageError("--resume and --overwrite exclude each other");
  examples::settle_run_folder(run_directory(config.out), parallel, err);
  if (config.resume) config = with_saved_settings(app, config);
  if (const auto problem = validate(config)) throw UsageError(*problem);
  if (!config.resume) run_directory(config.out).check_new(config.overwrite);
  if (!config.data.empty() && !fs::exists(config.data)) {
    throw UsageError(fmt::format("--data {} does not exist", config.data));
  }
  return examples::run_training(
      parallel, out, err, interactive,
      [&](std::ostream& o, std::ostream& e, bool bar) { return train(config, o, e, bar, {}, parallel).interrupted; },
      run_directory(config.out), [&] { return write_report(config.out); });
}

struct EvaluateArgs {
  std::string run, split = "test", data;
  bool no_download = false;
  std::int64_t batch_size = 0;  // 0: the run's
  std::int64_t threads = 2;
  bool by_length = false;
  std::string precision;  // empty: the run's
};

namespace {
// evaluate --by-length: the split by length band, with the run's temperature and with the one
// temperature that fits this split best, which shows what a length-dependent one changes.
void print_by_length(const std::string& split, const EvalResult& r, const LengthTemperature& run_t,
                     const std::optional<EvalResult>& windows, std::ostream& out) {
  const auto one = LengthTemperature::constant(tapegrad::train::fit_temperature(r.logits, r.labels));
  out << fmt::format("{} by length: one temperature fitted on this split ({}) / the run's ({}):\n", split,
                     describe(one), describe(run_t));
  const auto with_one = length_bands(r, one), with_run = length_bands(r, run_t);
  for (std::size_t k = 0; k < with_one.size(); ++k) {
    if (with_one[k].count == 0) continue;
    const std::string upper =
        with_one[k].upper == std::numeric_limits<std::size_t>::max() ? "" : std::to_string(with_one[k].upper);
    out << fmt::format("  {:>4}-{:<4} tokens: {:>5} reviews, accuracy {:.1f}%, mean confidence {:.1f}% / {:.1f}%\n",
                       with_one[k].lower, upper, with_one[k].count, 100.0 * with_one[k].accuracy,
                       100.0 * with_one[k].confidence, 100.0 * with_run[k].confidence);
  }
  out << fmt::format("  expected calibration error {:.2f}% / {:.2f}%, mean NLL {:.4f} / {:.4f}\n",
                     100.0 * calibration_of(r, one).calibrated.expected_calibration_error,
                     100.0 * calibration_of(r, run_t).calibrated.expected_calibration_error, mean_nll(r, one),
                     mean_nll(r, run_t));
  if (windows) {
    out << fmt::format(
        "  the windows of 5-30 tokens: expected calibration error {:.2f}% / {:.2f}%, mean NLL {:.4f} / {:.4f}\n",
        100.0 * calibration_of(*windows, one).calibrated.expected_calibration_error,
        100.0 * calibration_of(*windows, run_t).calibrated.expected_calibration_error, mean_nll(*windows, one),
        mean_nll(*windows, run_t));
  }
}
}  // namespace

int evaluate_command(const EvaluateArgs& a, std::ostream& out, std::ostream& err) {
  // The flags first, then the files they name.
  if (const auto problem = examples::choice_problem("--split", a.split, {"test", "valid", "train"})) {
    throw UsageError(*problem);
  }
  if (a.batch_size < 0) throw UsageError(fmt::format("--batch-size {} must not be negative", a.batch_size));
  if (a.batch_size > examples::limits::kBatchSize) {
    throw UsageError(
        fmt::format("--batch-size {} is above the limit of {}", a.batch_size, examples::limits::kBatchSize));
  }
  start_on_run(a.run, a.threads, a.precision);
  if (!a.data.empty() && !fs::exists(a.data)) throw UsageError(fmt::format("--data {} does not exist", a.data));

  LoadedRun run = load_run(a.run);
  const tapegrad::autocast precision(examples::subcommand_uses_bfloat16(a.precision, run.config.precision, err));
  // The run's own data unless told otherwise (and if it is still there).
  std::string data_path = a.data;
  if (data_path.empty() && !run.config.data.empty() && fs::exists(run.config.data)) data_path = run.config.data;
  const RawData raw = read_data(data_path, a.no_download);
  err << fmt::format("data: {} ({}), read in {:.1f} s\n", raw.path.string(), raw.source, raw.seconds);
  const auto split = split_of(raw, run.config);
  const auto max_len = static_cast<std::size_t>(run.config.max_len);
  const auto truncation = truncation_of(run.config);
  namespace ds = tapegrad::datasets;
  const ds::EncodedDataset data =
      a.split == "test"    ? ds::EncodedDataset::encode(raw.reviews.test, run.vocab, max_len, truncation)
      : a.split == "valid" ? ds::EncodedDataset::encode(raw.reviews.train, split.valid, run.vocab, max_len, truncation)
                           : ds::EncodedDataset::encode(raw.reviews.train, split.train, run.vocab, max_len, truncation);
  if (data.size() == 0) {
    throw UsageError(fmt::format("--split {}: the run {} has no {} reviews (its --valid-fraction is {})", a.split,
                                 a.run, a.split == "valid" ? "validation" : "training", run.config.valid_fraction));
  }
  const auto batch_size = static_cast<std::size_t>(a.batch_size > 0 ? a.batch_size : run.config.batch_size);
  const EvalResult r = evaluate(*run.model, data, batch_size);
  out << fmt::format("{}: accuracy {:.2f}% ({}/{}), loss {:.4f} ({:.1f} s)\n", a.split, 100.0 * r.accuracy, r.correct,
                     r.count, r.loss, r.seconds);
  if (r.encoder_accuracy && r.wide_accuracy) {
    out << fmt::format("{}: the parts alone: encoder {:.2f}%, n-grams {:.2f}% (weighted {} x n-grams in the sum)\n",
                       a.split, 100.0 * *r.encoder_accuracy, 100.0 * *r.wide_accuracy,
                       describe_wide_weight(*run.model));
  }
  const Calibration c = calibration_of(r, run.temperature);
  out << fmt::format("{}: expected calibration error {:.2f}% with the temperature, {} ({:.2f}% without)\n", a.split,
                     100.0 * c.calibrated.expected_calibration_error, describe(c.temperature),
                     100.0 * c.uncalibrated.expected_calibration_error);
  if (c.short_count > 0) {
    out << fmt::format("{}: {} reviews under {} tokens: expected calibration error {:.2f}% ({:.2f}% without)\n",
                       a.split, c.short_count, kShortReviewTokens, 100.0 * c.short_ece,
                       100.0 * c.short_ece_uncalibrated);
  }
  std::optional<EvalResult> windows;
  if (a.split == "valid") {  // the training run's short-text score, recomputed
    const EvalResult& w = windows.emplace(evaluate(*run.model, data, batch_size, {}, kValidWindows));
    out << fmt::format(
        "valid, one window of {}-{} tokens of each review: accuracy {:.2f}%{}, expected calibration "
        "error {:.2f}%\n",
        kValidWindows.min_tokens, kValidWindows.max_tokens, 100.0 * w.accuracy,
        w.encoder_accuracy && w.wide_accuracy ? fmt::format(" (encoder alone {:.2f}%, n-grams alone {:.2f}%)",
                                                            100.0 * *w.encoder_accuracy, 100.0 * *w.wide_accuracy)
                                              : std::string(),
        100.0 * calibration_of(w, run.temperature).calibrated.expected_calibration_error);
  }
  if (a.by_length) print_by_length(a.split, r, run.temperature, windows, out);
  return 0;
}

struct PredictArgs {
  std::string run;
  std::vector<std::string> texts;
  std::int64_t threads = 2;
  std::string precision;  // empty: the run's
};

int predict_command(const PredictArgs& a, std::istream& in, std::ostream& out, std::ostream& err) {
  start_on_run(a.run, a.threads, a.precision);
  std::vector<std::string> texts = a.texts;
  const bool from_stdin = texts.empty();
  const auto has_tokens = [](const std::string& text) {
    bool any = false;
    tapegrad::datasets::for_each_token(text, [&](std::string_view) { any = true; });
    return any;
  };
  if (from_stdin) {
    for (std::string line; std::getline(in, line);) texts.push_back(line);
    // Blank lines at the end of a file are its end, not reviews (an editor's or `echo`'s last newline).
    while (!texts.empty() && !has_tokens(texts.back())) texts.pop_back();
  }
  if (texts.empty()) throw UsageError("nothing to predict: give reviews as arguments or as lines on stdin");
  // A review without a token (a blank line between reviews) would get the model's P(positive) of
  // nothing, which looks like an answer; the output keeps one line per review, so it is refused rather
  // than skipped.
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (!has_tokens(texts[i])) {
      throw UsageError(fmt::format("{} {} has no tokens: nothing to predict from", from_stdin ? "line" : "review",
                                   from_stdin ? fmt::format("{} of stdin", i + 1) : std::to_string(i + 1)));
    }
  }
  LoadedRun run = load_run(a.run);
  const tapegrad::autocast precision(examples::subcommand_uses_bfloat16(a.precision, run.config.precision, err));
  const auto probabilities = predict_proba(*run.model, run.vocab, run.config, texts,
                                           static_cast<std::size_t>(run.config.batch_size), run.temperature);
  for (const double p : probabilities) out << fmt::format("{:.6f}\n", p);
  return 0;
}

struct ExplainArgs {
  std::string run, output;
  std::vector<std::string> words;
  std::int64_t threads = 2;
  std::string precision;  // empty: the run's
};

int explain_command(const ExplainArgs& a, std::istream& in, std::ostream& out, std::ostream& err) {
  start_on_run(a.run, a.threads, a.precision);
  std::string text;
  if (a.words.empty()) {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    for (const auto& word : a.words) text += (text.empty() ? "" : " ") + word;
  }
  LoadedRun run = load_run(a.run);
  const tapegrad::autocast precision(examples::subcommand_uses_bfloat16(a.precision, run.config.precision, err));
  Explanation e;
  try {
    e = explain_text(*run.model, run.vocab, run.config, text, run.temperature);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  const fs::path output = a.output.empty() ? fs::path(a.run) / "explain.html" : fs::path(a.output);
  tapegrad::io::write_file_atomically(output, explain_html(e, text, a.run));
  out << fmt::format("P(positive) = {:.6f} ({} tokens); wrote {}\n", e.p_positive, e.tokens.size(), output.string());
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const Parallel& parallel) {
  CLI::App app(
      "Trains a Transformer sentiment classifier on IMDb movie reviews (Maas et al. 2011).\n"
      "With no subcommand it trains; `evaluate`, `predict`, `explain` and `report` use a finished run.",
      kProgram);
  app.require_subcommand(0, 1);
  Config config;
  flags().add_to(app, config);

  EvaluateArgs eval_args;
  CLI::App* evaluate_app = app.add_subcommand("evaluate", "accuracy and loss of a run's model on a split");
  evaluate_app->add_option("--run", eval_args.run, "run folder (config.json, vocab.txt, model.safetensors)")
      ->required();
  evaluate_app->add_option("--split", eval_args.split, "test|valid|train")->capture_default_str();
  evaluate_app->add_option("--data", eval_args.data, "aclImdb folder or .tar.gz (default: the run's, else found)");
  evaluate_app->add_flag("--no-download", eval_args.no_download, "fail instead of downloading the data");
  evaluate_app->add_option("--batch-size", eval_args.batch_size, "reviews per batch (default: the run's)");
  examples::add_threads_and_precision(*evaluate_app, eval_args);
  evaluate_app->add_flag("--by-length", eval_args.by_length,
                         "also accuracy and mean confidence by review length, with one temperature fitted on the split "
                         "and with the run's");

  PredictArgs predict_args;
  CLI::App* predict_app =
      app.add_subcommand("predict", "P(positive) of each review (one per line on stdin if none given)");
  predict_app->add_option("--run", predict_args.run, "run folder")->required();
  predict_app->add_option("reviews", predict_args.texts, "review texts");
  examples::add_threads_and_precision(*predict_app, predict_args);

  ExplainArgs explain_args;
  CLI::App* explain_app = app.add_subcommand(
      "explain", "an HTML page of the model's attention and token saliency for one review (stdin if none given)");
  explain_app->add_option("--run", explain_args.run, "run folder")->required();
  explain_app->add_option("review", explain_args.words, "the review (its words are joined with spaces)");
  explain_app->add_option("--output", explain_args.output, "the HTML file to write (default: RUN/explain.html)");
  examples::add_threads_and_precision(*explain_app, explain_args);

  std::string report_run;
  CLI::App* report_app =
      app.add_subcommand("report", "an HTML page of a run's curves, configuration and timing (RUN/report.html)");
  report_app->add_option("--run", report_run, "run folder")->required();

  if (const auto code = examples::parse_command_line(app, argc, argv, out, err, kProgram)) return *code;

  return tapegrad::train::exit_code_of(kProgram, err, [&] {
    CLI::App* command = nullptr;
    for (CLI::App* sub : {evaluate_app, predict_app, explain_app, report_app})
      if (sub->parsed()) command = sub;
    if (command) {
      examples::check_subcommand(app, *command, parallel);
      if (command == evaluate_app) return evaluate_command(eval_args, out, err);
      if (command == predict_app) return predict_command(predict_args, in, out, err);
      if (command == explain_app) return explain_command(explain_args, in, out, err);
      return examples::report_command(
          run_directory(report_run), [&] { return write_report(report_run); }, out, err);
    }
    return train_command(app, config, out, err, interactive, parallel);
  });
}

}  // namespace imdb
