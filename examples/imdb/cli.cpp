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
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/progress.hpp"

namespace imdb {

namespace fs = std::filesystem;

namespace {

constexpr const char* kProgram = "train_imdb";

// Binds every training flag to its field of config; the defaults shown are the struct's.
void add_training_flags(CLI::App& app, Config& c) {
  auto group = [&](const char* name) { return app.add_option_group(name); };
  auto* data = group("Data");
  data->add_option("--data", c.data, "aclImdb folder or .tar.gz (default: found automatically)");
  data->add_flag("--no-download", c.no_download, "fail instead of downloading the data");
  data->add_option("--vocab-size", c.vocab_size, "vocabulary size including <pad> and <unk>")->capture_default_str();
  data->add_option("--max-len", c.max_len, "tokens kept per review")->capture_default_str();
  data->add_option("--valid-fraction", c.valid_fraction, "share of train/ held out for validation (seeded)")
      ->capture_default_str();
  data->add_option("--truncate", c.truncate, "which tokens a longer review keeps: head|tail|head+tail")
      ->capture_default_str();

  auto* model = group("Model");
  model->add_option("--layers", c.layers, "encoder layers")->capture_default_str();
  model->add_option("--d-model", c.d_model, "embedding width")->capture_default_str();
  model->add_option("--heads", c.heads, "attention heads (must divide --d-model)")->capture_default_str();
  model->add_option("--ff", c.ff, "feed-forward width")->capture_default_str();
  model->add_option("--dropout", c.dropout, "dropout probability")->capture_default_str();
  model->add_option("--attn-dropout", c.attn_dropout, "attention-weight dropout probability")->capture_default_str();
  model->add_option("--word-dropout", c.word_dropout, "share of training tokens replaced by <unk>")
      ->capture_default_str();
  model->add_option("--crop", c.crop, "share of training reviews replaced by a random window of their tokens")
      ->capture_default_str();
  model->add_option("--crop-min", c.crop_min, "a crop's shortest window, in tokens")->capture_default_str();
  model->add_option("--crop-max", c.crop_max, "a crop's longest window, in tokens")->capture_default_str();
  model
      ->add_option("--clause-negation", c.clause_negation,
                   "share of training reviews replaced by one of their clauses where a copula meets a word of the "
                   "review's polarity, half of them negated (\"was not superb\") with the label flipped")
      ->capture_default_str();
  model
      ->add_option("--polarity-margin", c.polarity_margin,
                   "|naive-Bayes log-count ratio| from which --clause-negation counts a word as polar")
      ->capture_default_str();
  model->add_option("--activation", c.activation, "relu|gelu")->capture_default_str();
  model->add_option("--norm", c.norm, "post|pre: LayerNorm after or before each sublayer")->capture_default_str();
  model->add_option("--pooling", c.pooling, "max|mean|cls")->capture_default_str();
  model->add_option("--pos", c.pos, "positional encoding: sinusoidal|learned")->capture_default_str();
  model
      ->add_option("--ngram-buckets", c.ngram_buckets,
                   "rows of the hashed n-gram embedding added to the token embeddings (0 = none)")
      ->capture_default_str();
  model->add_option("--ngram-max", c.ngram_max, "longest hashed n-gram (2 = bigrams only)")->capture_default_str();
  model
      ->add_option("--ngram-dim", c.ngram_dim, "width of the n-gram table's rows, projected to --d-model (0 = d-model)")
      ->capture_default_str();
  model
      ->add_option("--wide-buckets", c.wide_buckets,
                   "rows of a linear model over each review's hashed n-grams, added to the logits (0 = none)")
      ->capture_default_str();
  model->add_option("--wide-max-n", c.wide_max_n, "longest n-gram of the linear model (1 = words only)")
      ->capture_default_str();
  model
      ->add_flag("--wide-nb,!--no-wide-nb", c.wide_nb,
                 "scale the linear model's n-gram features by their naive-Bayes log-count ratios on the training "
                 "reviews (NBSVM)")
      ->capture_default_str();
  model
      ->add_flag("--wide-negation,!--no-wide-negation", c.wide_negation,
                 "mark the words between a negation and the next punctuation as n-gram features of their own in the "
                 "linear model (\"not ... bad\" is not \"bad\")")
      ->capture_default_str();
  model
      ->add_option("--wide-negation-factor", c.wide_negation_factor,
                   "with --wide-negation, a negated word also counts as itself times a factor learned from this "
                   "start (-1: reversed, so that words seldom negated in training are reversed too; 0 = none)")
      ->capture_default_str();
  model
      ->add_flag("--wide-weight-by-length,!--no-wide-weight-by-length", c.wide_weight_by_length,
                 "fit the linear model's weight in the mixture as a + b ln(review length) rather than one number "
                 "(its confidence grows with the length faster than the encoder's)")
      ->capture_default_str();
  model
      ->add_option("--wide-loss", c.wide_loss,
                   "separate|joint: one loss per part (encoder and linear model), or one on the summed logits")
      ->capture_default_str();

  auto* opt = group("Optimization");
  opt->add_option("--optimizer", c.optimizer, "adam|adamw|sgd")->capture_default_str();
  opt->add_option("--lr", c.lr, "peak learning rate (noam: the factor)")->capture_default_str();
  opt->add_option("--warmup", c.warmup, "warmup steps")->capture_default_str();
  opt->add_option("--schedule", c.schedule,
                  "constant|linear|cosine|inv-sqrt|noam (linear: warmup, then linear decay to 0 at the last step)")
      ->capture_default_str();
  opt->add_option("--betas", c.betas, "Adam betas")->capture_default_str();
  opt->add_option("--eps", c.eps, "Adam epsilon")->capture_default_str();
  opt->add_option("--weight-decay", c.weight_decay, "decoupled for adamw, L2 for adam and sgd")->capture_default_str();
  opt->add_option("--momentum", c.momentum, "sgd momentum")->capture_default_str();
  opt->add_option("--clip-norm", c.clip_norm, "gradient norm clipping, 0 disables")->capture_default_str();
  opt->add_option("--ema", c.ema,
                  "decay of an exponential moving average of the parameters, used for validation and the saved "
                  "model; 0 disables")
      ->capture_default_str();
  opt->add_option("--batch-size", c.batch_size, "reviews per step")->capture_default_str();
  opt->add_option("--epochs", c.epochs, "passes over the training reviews")->capture_default_str();
  opt->add_option("--seed", c.seed, "seeds the split, the initialization, the shuffle and dropout")
      ->capture_default_str();
  opt->add_option("--bucket", c.bucket, "bucketing chunk in batches (0 = off)")->capture_default_str();
  opt->add_option("--init-from", c.init_from,
                  "a train_lm --objective masked run: start from its vocabulary, embedding and encoder");

  auto* run = group("Run");
  run->add_option("--threads", c.threads, "BLAS threads")->capture_default_str();
  run->add_option("--precision", c.precision, examples::kPrecisionHelp)->capture_default_str();
  run->add_option("--log-every", c.log_every, "steps between metrics.jsonl lines and plain progress lines")
      ->capture_default_str();
  run->add_option("--out", c.out, "run folder")->capture_default_str();
  run->add_flag("--resume", c.resume, "continue the run in --out from its last checkpoint");
  run->add_flag("--overwrite", c.overwrite,
                "start a new run in --out even if it holds one (whose files are then removed); without it a "
                "folder with a checkpoint or a model is refused");
  run->add_flag("--detect-anomaly", c.detect_anomaly,
                "check every op's output and gradients for NaN/inf and stop naming the op (slower)");
}

bool given(const CLI::App& app, const std::string& flag) {
  const CLI::Option* option = app.get_option_no_throw(flag);
  return option != nullptr && option->count() > 0;
}

// --resume: the saved config.json supplies every setting not given on the command line.
Config with_saved_settings(const CLI::App& app, const Config& config) {
  const auto run = run_directory(config.out);
  run.check_resumable({tapegrad::train::RunDirectory::kConfig});
  nlohmann::json merged = to_json(config);
  // Named: items() of a temporary would outlive it in the range-for.
  const nlohmann::json saved = to_json(read_config(run));
  for (const auto& [key, value] : saved.items()) {
    // Not a flag: train() takes it from config.json once the --precision given is checked against the run's.
    if (key == "precision-resolved") continue;
    if (!given(app, "--" + key)) merged[key] = value;
  }
  Config result = config_from_json(merged);
  result.no_download = config.no_download;
  result.threads = config.threads;
  result.log_every = config.log_every;
  result.out = config.out;
  result.resume = true;
  return result;
}

void check_positive(const char* flag, std::int64_t value) {
  if (value <= 0) throw UsageError(fmt::format("{} {} must be positive", flag, value));
}

// --threads of the subcommands, bounded like training's (an int64 above 2^31 used to wrap to 2).
void check_threads(std::int64_t threads) {
  check_positive("--threads", threads);
  Config c;
  c.threads = threads;
  if (const auto problem = validate(c)) throw UsageError(*problem);
}

// A run folder for evaluate/predict: it must hold the files load_run reads.
void check_run_folder(const std::string& dir) {
  run_directory(dir).check_has(
      {tapegrad::train::RunDirectory::kConfig, kVocabFile, tapegrad::train::RunDirectory::kModel});
}

int train_command(const CLI::App& app, Config config, std::ostream& out, std::ostream& err, bool interactive,
                  const Parallel& parallel) {
  if (config.resume && config.overwrite) throw UsageError("--resume and --overwrite exclude each other");
  if (config.resume) config = with_saved_settings(app, config);
  if (const auto problem = validate(config)) throw UsageError(*problem);
  if (!config.resume) run_directory(config.out).check_new(config.overwrite);
  if (!config.data.empty() && !fs::exists(config.data)) {
    throw UsageError(fmt::format("--data {} does not exist", config.data));
  }
  tapegrad::train::install_interrupt_handler();
  TrainResult result;
  try {
    // Ranks other than 0 train silently; their errors still reach stderr through exit_code_of.
    std::ostream silent(nullptr);
    const bool rank0 = parallel.rank == 0;
    result = train(config, rank0 ? out : silent, rank0 ? err : silent, interactive && rank0, {}, parallel);
  } catch (...) {
    tapegrad::train::remove_interrupt_handler();
    throw;
  }
  tapegrad::train::remove_interrupt_handler();
  // Once config.json exists the run has a report, even an interrupted one.
  if (parallel.rank == 0 && fs::exists(run_directory(config.out).config())) {
    out << fmt::format("report: {}\n", write_report(config.out).string()) << std::flush;
  }
  return result.interrupted ? tapegrad::train::kInterruptedExitCode : 0;
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
  check_threads(a.threads);
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw UsageError(*problem);
  check_run_folder(a.run);
  if (!a.data.empty() && !fs::exists(a.data)) throw UsageError(fmt::format("--data {} does not exist", a.data));
  tapegrad::set_num_threads(static_cast<int>(a.threads));

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
  check_threads(a.threads);
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw UsageError(*problem);
  check_run_folder(a.run);
  tapegrad::set_num_threads(static_cast<int>(a.threads));
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
  check_threads(a.threads);
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw UsageError(*problem);
  check_run_folder(a.run);
  tapegrad::set_num_threads(static_cast<int>(a.threads));
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

int report_command(const std::string& run, std::ostream& out) {
  run_directory(run).check_has({tapegrad::train::RunDirectory::kConfig});
  out << fmt::format("report: {}\n", write_report(run).string());
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
  add_training_flags(app, config);

  EvaluateArgs eval_args;
  CLI::App* evaluate_app = app.add_subcommand("evaluate", "accuracy and loss of a run's model on a split");
  evaluate_app->add_option("--run", eval_args.run, "run folder (config.json, vocab.txt, model.safetensors)")
      ->required();
  evaluate_app->add_option("--split", eval_args.split, "test|valid|train")->capture_default_str();
  evaluate_app->add_option("--data", eval_args.data, "aclImdb folder or .tar.gz (default: the run's, else found)");
  evaluate_app->add_flag("--no-download", eval_args.no_download, "fail instead of downloading the data");
  evaluate_app->add_option("--batch-size", eval_args.batch_size, "reviews per batch (default: the run's)");
  evaluate_app->add_option("--threads", eval_args.threads, "BLAS threads")->capture_default_str();
  evaluate_app->add_option("--precision", eval_args.precision, examples::kSubcommandPrecisionHelp);
  evaluate_app->add_flag("--by-length", eval_args.by_length,
                         "also accuracy and mean confidence by review length, with one temperature fitted on the split "
                         "and with the run's");

  PredictArgs predict_args;
  CLI::App* predict_app =
      app.add_subcommand("predict", "P(positive) of each review (one per line on stdin if none given)");
  predict_app->add_option("--run", predict_args.run, "run folder")->required();
  predict_app->add_option("reviews", predict_args.texts, "review texts");
  predict_app->add_option("--threads", predict_args.threads, "BLAS threads")->capture_default_str();
  predict_app->add_option("--precision", predict_args.precision, examples::kSubcommandPrecisionHelp);

  ExplainArgs explain_args;
  CLI::App* explain_app = app.add_subcommand(
      "explain", "an HTML page of the model's attention and token saliency for one review (stdin if none given)");
  explain_app->add_option("--run", explain_args.run, "run folder")->required();
  explain_app->add_option("review", explain_args.words, "the review (its words are joined with spaces)");
  explain_app->add_option("--output", explain_args.output, "the HTML file to write (default: RUN/explain.html)");
  explain_app->add_option("--threads", explain_args.threads, "BLAS threads")->capture_default_str();
  explain_app->add_option("--precision", explain_args.precision, examples::kSubcommandPrecisionHelp);

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
      // The training flags live in option groups, which CLI11 keeps as unnamed subcommands.
      for (CLI::App* group : app.get_subcommands([](CLI::App* sub) { return sub->get_name().empty(); })) {
        for (const CLI::Option* option : group->get_options()) {
          if (option->count() == 0) continue;
          throw UsageError(fmt::format("{} is a training flag; put {} flags after the subcommand", option->get_name(),
                                       command->get_name()));
        }
      }
      if (parallel.size > 1) {
        throw UsageError(fmt::format("{} runs in one process: start it without mpirun", command->get_name()));
      }
      if (command == evaluate_app) return evaluate_command(eval_args, out, err);
      if (command == predict_app) return predict_command(predict_args, in, out, err);
      if (command == explain_app) return explain_command(explain_args, in, out, err);
      return report_command(report_run, out);
    }
    return train_command(app, config, out, err, interactive, parallel);
  });
}

}  // namespace imdb
