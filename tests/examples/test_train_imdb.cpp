// The IMDb training program (examples/imdb): its command line, a tiny end-to-end run on the fixture,
// --resume after an interruption, and predict/evaluate through the built executable.
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "examples/imdb/cli.hpp"
#include "examples/imdb/config.hpp"
#include "examples/imdb/data.hpp"
#include "examples/imdb/evaluate.hpp"
#include "examples/imdb/explain.hpp"
#include "examples/imdb/features/log_count_ratio.hpp"
#include "examples/imdb/features/negation.hpp"
#include "examples/imdb/features/negation_scope.hpp"
#include "examples/imdb/html.hpp"
#include "examples/imdb/html_explain.hpp"
#include "examples/imdb/html_report.hpp"
#include "examples/imdb/length_temperature.hpp"
#include "examples/imdb/logit_weights.hpp"
#include "examples/imdb/model.hpp"
#include "examples/imdb/train.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/ngram_hash.hpp"
#include "tapegrad/train/calibration.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/progress.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/examples/programs.hpp"
#include "tests/examples/tiny_runs.hpp"
#include "tests/helpers.hpp"
#include "tests/train/timeless_metrics.hpp"

namespace fs = std::filesystem;

using namespace tapegrad::testing;

namespace {

const fs::path kFixture = fs::path(TAPEGRAD_TEST_DATA_DIR) / "aclImdb_small";

// A tiny model on the 12-review fixture: one review of each class held out, 2 steps per epoch. In fp32:
// the tests recompute the program's results in-process, outside autocast (test_precision.cpp tests bf16).
imdb::Config tiny_config(const fs::path& out, std::int64_t epochs) {
  imdb::Config c = tapegrad::testing::imdb_tiny_config();
  c.precision = "fp32";
  c.ngram_buckets = 64;
  c.wide_buckets = 97;
  c.epochs = epochs;
  c.lr = 0.02;
  c.dropout = 0.1;
  c.log_every = 1;
  c.out = out.string();
  return c;
}

// The fixture split and encoded as a finished run did it.
imdb::EncodedSplits run_splits(const imdb::LoadedRun& run) {
  const imdb::RawData raw = imdb::read_data(kFixture.string(), true);
  return imdb::encode_splits(raw, imdb::split_of(raw, run.config), run.vocab, run.config);
}

// Every example of a dataset as one batch.
tapegrad::datasets::Batch whole(const tapegrad::datasets::EncodedDataset& data) {
  std::vector<std::size_t> all(data.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  return tapegrad::datasets::collate(data, all);
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The raw bytes of a tensor's values.
template <typename V>
std::string bytes_of(const xt::xarray<V>& values) {
  std::string bytes;
  for (const V v : values) {
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes.append(p, p + sizeof(V));
  }
  return bytes;
}

// Every tensor of a safetensors file by name, as bytes (its metadata holds timings, so the files differ).
std::map<std::string, std::string> tensors_of(const fs::path& path) {
  namespace st = tapegrad::io::safetensors;
  const st::File file(path.string());
  std::map<std::string, std::string> tensors;
  for (const auto& name : file.names()) {
    std::string& bytes = tensors[name];
    switch (file.dtype(name)) {
      case st::Dtype::F32:
        bytes = bytes_of(file.get<float>(name));
        break;
      case st::Dtype::F64:
        bytes = bytes_of(file.get<double>(name));
        break;
      case st::Dtype::I64:
        bytes = bytes_of(file.get<std::int64_t>(name));
        break;
      case st::Dtype::U64:
        bytes = bytes_of(file.get<std::uint64_t>(name));
        break;
      case st::Dtype::BOOL:
        bytes = bytes_of(file.get<bool>(name));
        break;
      default:
        FAIL("unexpected dtype of " << name);
    }
  }
  return tensors;
}

std::vector<double> parse_numbers(const std::string& text) {
  std::vector<double> values;
  std::istringstream in(text);
  for (double v; in >> v;) values.push_back(v);
  return values;
}

}  // namespace

TEST_CASE("train_imdb rejects bad settings with one line naming the flag and exit code 2", "[imdb]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--d-model", "63", "--heads", "4"}, "train_imdb: --d-model 63 is not divisible by --heads 4\n"},
      {{"--vocab-size=-5"}, "train_imdb: --vocab-size -5 is outside [3, 10000000]\n"},
      {{"--batch-size", "0"}, "train_imdb: --batch-size 0 must be positive\n"},
      {{"--dropout", "1.5"}, "train_imdb: --dropout 1.5 is outside [0, 1)\n"},
      {{"--attn-dropout=-0.1"}, "train_imdb: --attn-dropout -0.1 is outside [0, 1)\n"},
      {{"--truncate", "middle"}, "train_imdb: --truncate middle is not one of head|tail|head+tail\n"},
      {{"--schedule", "step"}, "train_imdb: --schedule step is not one of constant|linear|cosine|inv-sqrt|noam\n"},
      {{"--optimizer", "lbfgs"}, "train_imdb: --optimizer lbfgs is not one of adam|adamw|sgd\n"},
      {{"--betas", "0.9"}, "train_imdb: --betas 0.9: expected two numbers separated by a comma\n"},
      {{"--betas", "0.9,1.5"}, "train_imdb: --betas 0.9,1.5 has 1.5 outside [0, 1)\n"},
      {{"--warmup=-1"}, "train_imdb: --warmup -1 must not be negative\n"},
      {{"--ngram-buckets", "1"}, "train_imdb: --ngram-buckets 1 is outside 0 or [2, 100000000]\n"},
      {{"--ngram-max", "1"}, "train_imdb: --ngram-max 1 is outside [2, 8]\n"},
      {{"--ngram-dim", "65"}, "train_imdb: --ngram-dim 65 is outside [0, --d-model 64]\n"},
      {{"--wide-buckets", "1"}, "train_imdb: --wide-buckets 1 is outside 0 or [2, 100000000]\n"},
      {{"--wide-loss", "both"}, "train_imdb: --wide-loss both is not one of joint|separate\n"},
      {{"--data", "/nonexistent/aclImdb"}, "train_imdb: --data /nonexistent/aclImdb does not exist\n"},
      {{"evaluate", "--run", "/nonexistent/run"}, "train_imdb: --run /nonexistent/run has no config.json\n"},
      {{"--epochs", "2", "predict", "--run", "x"},
       "train_imdb: --epochs is a training flag; put predict flags after the subcommand\n"},
  };
  for (const auto& [args, expected] : cases) {
    INFO(args.front());
    const CliResult r = run_imdb(args);
    CHECK(r.code == 2);
    CHECK(r.err == expected);
    CHECK(r.out.empty());
  }

  // CLI11's own errors: one line and exit code 2 as well.
  for (const auto& args : std::vector<std::vector<std::string>>{{"--bogus"}, {"--epochs", "three"}, {"evaluate"}}) {
    const CliResult r = run_imdb(args);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("train_imdb: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(run_imdb({"--help"}).code == 0);
}

TEST_CASE("train_imdb: warmup longer than training and a --resume without a run are usage errors", "[imdb]") {
  TempDir tmp;
  auto base = tapegrad::testing::text_tiny_args();
  base.insert(base.end(), {"--max-len", "32", "--epochs", "2", "--out", tmp.path.string()});
  auto args = base;
  args.insert(args.end(), {"--warmup", "100"});
  CliResult r = run_imdb(args);
  CHECK(r.code == 2);
  CHECK(r.err.find("train_imdb: --warmup 100 must be less than the 6 training steps (--epochs 2 x 3 batches)\n") !=
        std::string::npos);
  CHECK(fs::is_empty(tmp.path));  // nothing written for a run that cannot start

  args = base;
  args.push_back("--resume");
  r = run_imdb(args);
  CHECK(r.code == 2);
  CHECK(r.err == fmt::format("train_imdb: --resume: {} does not exist, so there is no run to continue\n",
                             (tmp.path / "config.json").string()));
}

TEST_CASE("train_imdb trains a tiny model on the fixture and predict agrees with the model in-process", "[imdb]") {
  TempDir tmp;
  imdb::Config config = tiny_config(tmp.path, 8);
  config.wide_buckets = 0;  // the encoder alone, whose temperature is fitted by itself (the wide part: below)
  std::ostringstream out, log;
  const imdb::TrainResult result = imdb::train(config, out, log, false);

  REQUIRE_FALSE(result.interrupted);
  REQUIRE(result.epochs.size() == 8);
  CHECK(result.steps == 16);
  // The training loss falls: the last two epochs' mean below the first two's.
  const auto& e = result.epochs;
  CHECK(e[6].train_loss + e[7].train_loss < e[0].train_loss + e[1].train_loss - 0.05);
  CHECK(result.test.count == 6);
  CHECK(result.best_epoch >= 1);
  CHECK(out.str().find("test accuracy") != std::string::npos);
  for (const char* name : {"model.safetensors", "last.ckpt.safetensors", "vocab.txt", "config.json", "metrics.jsonl"}) {
    CHECK(fs::exists(tmp.path / name));
  }
  // One line per step (--log-every 1), one per epoch and the test score.
  CHECK(metrics_without_timing(tmp.path / "metrics.jsonl").size() == 16 + 8 + 1);

  // The saved run rebuilds the same model: its test accuracy is the one train reported.
  imdb::LoadedRun run = imdb::load_run(tmp.path);
  imdb::Config recorded = config;
  recorded.precision_resolved = "fp32";  // what --precision fp32 resolved to, which train() records
  CHECK(imdb::to_json(run.config) == imdb::to_json(recorded));
  const auto splits = run_splits(run);
  const imdb::EvalResult test = imdb::evaluate(*run.model, splits.test, 2);
  CHECK(test.accuracy == result.test.accuracy);
  CHECK(test.loss == Approx(result.test.loss).epsilon(1e-6));

  // Calibration: the (length-dependent) temperature in the model file is the one that fits the
  // validation reviews best;
  // the summary and the metrics report the test set's expected calibration error over 15 bins and the
  // contrast pairs.
  const auto valid = imdb::evaluate(*run.model, splits.valid, 2);
  const auto fitted = imdb::fit_length_temperature(valid.logits, valid.labels, valid.lengths);
  CHECK(run.temperature.a == Approx(fitted.a).epsilon(1e-9));
  CHECK(run.temperature.b == Approx(fitted.b).epsilon(1e-9).margin(1e-12));
  CHECK(run.temperature.shortest == fitted.shortest);
  CHECK(run.temperature.longest == fitted.longest);
  CHECK((run.temperature.a != 1.0 || run.temperature.b != 0.0));
  CHECK(out.str().find("calibration on the test set: expected calibration error") != std::string::npos);
  CHECK(out.str().find("contrast pairs: both members right in") != std::string::npos);
  const auto test_line = metrics_without_timing(tmp.path / "metrics.jsonl").back();
  CHECK(test_line.at("split") == "test");
  CHECK(test_line.at("reliability").size() == 15);
  CHECK(test_line.at("temperature_a").get<double>() == run.temperature.a);
  CHECK(test_line.at("temperature_b").get<double>() == run.temperature.b);
  CHECK(test_line.at("test_ece").get<double>() ==
        Approx(imdb::calibration_of(test, run.temperature).calibrated.expected_calibration_error));
  CHECK(test_line.at("contrast_pairs") == 60);
  CHECK(out.str().find("development contrast pairs: both members right in") != std::string::npos);
  CHECK(test_line.at("dev_contrast_pairs") == 50);
  // The short-text score on validation: one seeded window of 5-30 tokens of each review.
  CHECK(out.str().find("validation, one window of 5-30 tokens of each review: accuracy") != std::string::npos);
  const imdb::EvalResult windows = imdb::evaluate(*run.model, splits.valid, 2, {}, imdb::kValidWindows);
  CHECK(test_line.at("valid_window_acc").get<double>() == windows.accuracy);
  // Each review's length is that of the window the model saw.
  REQUIRE(windows.lengths.size() == valid.lengths.size());
  std::size_t window_tokens = 0;
  for (std::size_t i = 0; i < windows.lengths.size(); ++i) {
    CHECK(windows.lengths[i] <= 30);
    CHECK(windows.lengths[i] >= std::min<std::size_t>(5, valid.lengths[i]));
    window_tokens += windows.lengths[i];
  }
  CHECK(windows.tokens == window_tokens);
  CHECK(test_line.at("valid_window_ece").get<double>() ==
        Approx(imdb::calibration_of(windows, run.temperature).calibrated.expected_calibration_error));

  // predict gives P(positive) with the run's temperature.
  const std::vector<std::string> reviews = {"a wonderful , moving film . great acting", "terrible . boring and bad",
                                            "the plot was"};
  const std::vector<double> expected =
      imdb::predict_proba(*run.model, run.vocab, run.config, reviews, 64, run.temperature);
  const std::vector<double> at_one = imdb::predict_proba(*run.model, run.vocab, run.config, reviews);
  for (std::size_t i = 0; i < reviews.size(); ++i) {
    const double logit = std::log(at_one[i] / (1.0 - at_one[i]));  // logit[1] - logit[0]
    const double inverse = run.temperature.inverse(tapegrad::datasets::tokenize(reviews[i]).size());
    CHECK(expected[i] == Approx(1.0 / (1.0 + std::exp(-logit * inverse))).margin(1e-9));
  }
  // The same reviews as arguments (in-process) and one per line on stdin (the built program).
  const CliResult args_run = run_imdb({"predict", "--run", tmp.path.string(), reviews[0], reviews[1], reviews[2]});
  REQUIRE(args_run.code == 0);
  const fs::path input = tmp.path / "reviews.txt";
  std::ofstream(input) << reviews[0] << '\n' << reviews[1] << '\n' << reviews[2] << '\n';
  const auto [code, stdin_out] =
      shell(fmt::format("'{}' predict --run '{}' < '{}'", TRAIN_IMDB_PROGRAM, tmp.path.string(), input.string()));
  REQUIRE(code == 0);
  for (const std::string& printed : {args_run.out, stdin_out}) {
    const auto got = parse_numbers(printed);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).margin(1e-6));
  }
  CHECK(args_run.out == stdin_out);

  const auto [eval_code, eval_out] =
      shell(fmt::format("'{}' evaluate --run '{}' --split test --data '{}' --no-download", TRAIN_IMDB_PROGRAM,
                        tmp.path.string(), kFixture.string()));
  CHECK(eval_code == 0);
  CHECK(eval_out.rfind(fmt::format("test: accuracy {:.2f}% ({}/6)", 100.0 * test.accuracy, test.correct), 0) == 0);
  // On the validation split it also recomputes the run's short-window score.
  const CliResult valid_eval = run_imdb(
      {"evaluate", "--run", tmp.path.string(), "--split", "valid", "--data", kFixture.string(), "--no-download"});
  CHECK(valid_eval.code == 0);
  CHECK(valid_eval.out.find(fmt::format("valid, one window of 5-30 tokens of each review: accuracy {:.2f}%",
                                        100.0 * test_line.at("valid_window_acc").get<double>())) != std::string::npos);
  // --by-length: every review in one band, the bands' accuracies add up to the split's, and both
  // temperatures' calibration is printed.
  const auto bands = imdb::length_bands(valid, run.temperature);
  std::size_t banded = 0;
  double right = 0.0;
  for (const auto& band : bands) {
    banded += band.count;
    right += band.accuracy * static_cast<double>(band.count);
    if (band.count > 0) CHECK(band.confidence >= 0.5);
  }
  CHECK(banded == valid.count);
  CHECK(right == Approx(static_cast<double>(valid.correct)));
  const CliResult by_length = run_imdb({"evaluate", "--run", tmp.path.string(), "--split", "valid", "--data",
                                        kFixture.string(), "--no-download", "--by-length"});
  CHECK(by_length.code == 0);
  const auto one = imdb::LengthTemperature::constant(tapegrad::train::fit_temperature(valid.logits, valid.labels));
  CHECK(by_length.out.find(fmt::format("valid by length: one temperature fitted on this split ({}) / the run's ({}):",
                                       imdb::describe(one), imdb::describe(run.temperature))) != std::string::npos);
  CHECK(by_length.out.find(
            fmt::format("expected calibration error {:.2f}% / {:.2f}%, mean NLL {:.4f} / {:.4f}",
                        100.0 * imdb::calibration_of(valid, one).calibrated.expected_calibration_error,
                        100.0 * imdb::calibration_of(valid, run.temperature).calibrated.expected_calibration_error,
                        imdb::mean_nll(valid, one), imdb::mean_nll(valid, run.temperature))) != std::string::npos);
  CHECK(by_length.out.find("the windows of 5-30 tokens: expected calibration error") != std::string::npos);

  // A new run in the same folder is refused, and the finished run stays as it was.
  const std::string model_bytes = read_bytes(tmp.path / "model.safetensors");
  CHECK_THROWS_MATCHES(imdb::train(config, out, log, false), imdb::UsageError,
                       Catch::Message(fmt::format("--out {} already holds a run (config.json, metrics.jsonl, "
                                                  "last.ckpt.safetensors, model.safetensors, vocab.txt): continue "
                                                  "it with --resume, or pass --overwrite to replace it",
                                                  tmp.path.string())));
  const CliResult refused = run_imdb({"--out", tmp.path.string(), "--data", kFixture.string()});
  CHECK(refused.code == 2);
  CHECK(refused.err.find("already holds a run") != std::string::npos);
  CHECK(read_bytes(tmp.path / "model.safetensors") == model_bytes);

  // With --overwrite it starts, and stopped before its first checkpoint it leaves none of the old run's.
  imdb::Config overwriting = config;
  overwriting.overwrite = true;
  const auto stopped = imdb::train(overwriting, out, log, false, [](std::int64_t) { return true; });
  CHECK(stopped.interrupted);
  CHECK_FALSE(fs::exists(tmp.path / "model.safetensors"));
  CHECK_FALSE(fs::exists(tmp.path / "last.ckpt.safetensors"));
}

TEST_CASE("train_imdb: a model file of the encoder classifier's names alone is refused in one sentence", "[imdb]") {
  TempDir tmp;
  std::ostringstream out, log;
  imdb::train(tiny_config(tmp.path, 1), out, log, false);
  const imdb::LoadedRun run = imdb::load_run(tmp.path);
  // The same tensors with the encoder classifier's own names, "embedding.weight" for "deep.embedding.weight".
  tapegrad::StateDict<float> renamed;
  for (const auto& [name, tensor] : run.model->state_dict())
    renamed.emplace(name.rfind("deep.", 0) == 0 ? name.substr(5) : name, tensor);
  REQUIRE(renamed.count("embedding.weight") == 1);
  tapegrad::train::save_model(tmp.path / "model.safetensors", renamed);
  CHECK_THROWS_WITH(imdb::load_run(tmp.path),
                    Catch::Contains("model.safetensors: the model's tensors are named without the \"deep.\"") &&
                        Catch::Contains("train the run again"));
}

TEST_CASE("train_imdb --ngram-init nb: the n-gram table holds fixed log-count ratios of common n-grams", "[imdb]") {
  TempDir tmp;
  imdb::Config config = tiny_config(tmp.path, 2);
  config.wide_buckets = 0;
  config.ngram_buckets = 97;
  config.ngram_max = 3;
  config.ngram_dim = 1;
  config.ngram_init = "nb";
  config.ngram_min_docs = 2;
  std::ostringstream out, log;
  const imdb::TrainResult result = imdb::train(config, out, log, false);
  REQUIRE_FALSE(result.interrupted);

  // After two epochs the table is still naive Bayes' ratio over the training reviews' n-grams (words,
  // bigrams, trigrams) held by two or more of them, divided by sqrt(d_model); rarer buckets read 0.
  imdb::LoadedRun run = imdb::load_run(tmp.path);
  const auto& ngrams = run.model->deep->ngrams;
  REQUIRE(ngrams != nullptr);
  CHECK_FALSE(ngrams->weight.requires_grad());
  const auto batch = whole(run_splits(run).train);
  imdb::features::NgramLogCountRatio counts(97, 3);
  counts.add(batch.ids, batch.padding_mask, batch.labels);
  const xt::xarray<double> ratio = counts.ratio(1.0, 2);
  std::size_t kept = 0;
  for (std::size_t b = 0; b < 97; ++b) {
    CHECK(ngrams->weight.data()(b, 0) == Approx(ratio(b) / std::sqrt(8.0)).epsilon(1e-6));
    kept += ratio(b) != 0.0;
  }
  CHECK(kept > 0);
  CHECK(kept < 97);
  CHECK_THAT(log.str(), Catch::Contains(fmt::format("the log-count ratios of {} buckets held by 2 or more", kept)));
  // The projection into the model's width trains.
  const auto fresh = imdb::make_model(config, run.vocab);
  CHECK(xt::amax(xt::abs(run.model->deep->ngram_proj->weight.data() - fresh->deep->ngram_proj->weight.data()))() >
        1e-4);

  // A table of several columns cannot hold one ratio per bucket.
  config.ngram_dim = 4;
  CHECK(imdb::validate(config).value_or("").find("--ngram-init nb needs --ngram-dim 1") != std::string::npos);
  config.ngram_init = "uniform";
  CHECK(imdb::validate(config).value_or("").find("--ngram-init") != std::string::npos);
}

TEST_CASE("train_imdb --ngram-buckets: the hashed n-gram table is trained, saved and used by predict", "[imdb]") {
  TempDir tmp;
  imdb::Config config = tiny_config(tmp.path, 2);
  config.ngram_buckets = 97;
  config.ngram_max = 3;
  config.ngram_dim = 0;
  config.ngram_init = "normal";
  std::ostringstream out, log;
  const imdb::TrainResult result = imdb::train(config, out, log, false);
  REQUIRE_FALSE(result.interrupted);

  // The saved model holds the table (load_model checks every name and shape against the model), trained:
  // its rows moved from their initialization, except row 0 ("no n-gram"), which stays zero.
  imdb::LoadedRun run = imdb::load_run(tmp.path);
  REQUIRE(run.model->deep->ngrams != nullptr);
  const xt::xarray<float> table = run.model->deep->ngrams->weight.data();
  CHECK(table.shape(0) == 97);
  CHECK(table.shape(1) == 8);
  const auto fresh = imdb::make_model(config, run.vocab);
  CHECK(xt::amax(xt::abs(table - fresh->deep->ngrams->weight.data()))() > 1e-4);
  CHECK(xt::amax(xt::abs(xt::view(table, 0, xt::all())))() == 0.0f);

  // The same text scores the same in and out of process.
  const std::string review = "not bad at all , actually quite good";
  const double p = imdb::predict_proba(*run.model, run.vocab, run.config, {review}, 64, run.temperature).at(0);
  const CliResult predicted = run_imdb({"predict", "--run", tmp.path.string(), review});
  REQUIRE(predicted.code == 0);
  CHECK(parse_numbers(predicted.out).at(0) == Approx(p).margin(1e-6));
}

TEST_CASE("train_imdb --wide-buckets --wide-nb: NB-scaled n-gram part, weights fitted on validation, predict",
          "[imdb]") {
  TempDir tmp;
  imdb::Config config = tiny_config(tmp.path, 3);
  config.wide_buckets = 101;
  config.wide_max_n = 2;
  config.wide_nb = true;
  config.wide_loss = "separate";
  std::ostringstream out, log;
  const imdb::TrainResult result = imdb::train(config, out, log, false);
  REQUIRE_FALSE(result.interrupted);

  imdb::LoadedRun run = imdb::load_run(tmp.path);
  REQUIRE(run.model->wide != nullptr);
  // The saved scale is naive Bayes' log-count ratio over the training reviews, and the table trained.
  const auto splits = run_splits(run);
  imdb::features::NgramLogCountRatio counts(101, 2);
  const auto train_batch = whole(splits.train);
  // The default --wide-negation: the bag and its ratios read the ids with negation scopes marked.
  REQUIRE_FALSE(run.model->wide->negation.empty());
  CHECK(run.model->wide->negation.negators() == imdb::features::negator_ids(run.vocab));
  const auto marked = run.model->wide->negation.mark(train_batch.ids, train_batch.padding_mask);
  CHECK(xt::any(marked < 0));
  counts.add(marked, train_batch.padding_mask, train_batch.labels);
  const xt::xarray<double> ratio = counts.ratio(1.0);
  CHECK(counts.documents(0) + counts.documents(1) == splits.train.size());
  CHECK(log.str().find(fmt::format("--wide-nb: log-count ratios of 101 n-gram buckets from {} + {} training reviews",
                                   counts.documents(1), counts.documents(0))) != std::string::npos);
  for (std::size_t b = 0; b < 101; ++b) CHECK(run.model->wide->scale.data()(b, 0) == Approx(ratio(b)).epsilon(1e-6));
  CHECK(xt::amax(xt::abs(run.model->wide->weight.data()))() > 1e-4);

  // The parts' weights (a, b(n) = b0 + b1 ln n, the default --wide-weight-by-length) fitted on the
  // validation reviews after training. Their signs and sizes are the training run's: the two validation
  // reviews are separable, the fit runs to the edge of its range, and other kernels (the last bits of a
  // chaotic run) give the wide part a negative weight. What the fit guarantees is checked instead: it
  // minimizes the mixture's validation NLL, so the mixture does at least as well as either part alone at
  // that part's own fitted scale; and the model holds the weights exactly when both are positive.
  const imdb::EvalResult valid = imdb::evaluate(*run.model, splits.valid, 2);
  const auto weights = imdb::fit_part_weights(valid, true);
  REQUIRE(weights);
  const auto mixture_nll = [&](double encoder, const imdb::LengthTemperature& wide) {
    double total = 0;
    for (std::size_t i = 0; i < valid.count; ++i) {
      const double w = wide.inverse(valid.lengths[i]);
      const double z0 = encoder * valid.encoder_logits(i, 0) + w * valid.wide_logits(i, 0);
      const double z1 = encoder * valid.encoder_logits(i, 1) + w * valid.wide_logits(i, 1);
      const double top = std::max(z0, z1);
      total += top + std::log(std::exp(z0 - top) + std::exp(z1 - top)) - (valid.labels[i] == 1 ? z1 : z0);
    }
    return total / static_cast<double>(valid.count);
  };
  const double encoder_alone = imdb::fit_logit_weights({valid.encoder_logits}, valid.labels).at(0);
  const auto wide_alone = imdb::fit_length_temperature(valid.wide_logits, valid.labels, valid.lengths);
  const imdb::LengthTemperature no_wide{0.0, 0.0, 1.0, 1.0};
  const double mixture = mixture_nll(weights->encoder, weights->wide);
  // Up to 1e-6 nats: the encoder alone separates the two reviews too, and the fits stop at the edge of
  // their range with NLLs of 1e-15 to 1e-9 (the plain sum's is 0.66, the wide part's alone 0.72).
  CHECK(mixture <= mixture_nll(encoder_alone, no_wide) + 1e-6);
  CHECK(mixture <= mixture_nll(0.0, wide_alone) + 1e-6);
  const auto& stored = run.model->wide_weight.data();
  REQUIRE(stored.size() == 4);
  if (weights->encoder > 0 && weights->wide.problem().empty()) {
    // Both positive over the validation lengths: the model holds wide_weight = (b0 / a, b1 / a, shortest,
    // longest), and the temperature is fitted to the sum encoder + (b(n) / a) * wide that it then computes.
    CHECK(stored(0) == Approx(weights->wide.a / weights->encoder).epsilon(1e-4));
    CHECK(stored(1) == Approx(weights->wide.b / weights->encoder).epsilon(1e-4).margin(1e-6));
    CHECK(stored(2) == *std::min_element(valid.lengths.begin(), valid.lengths.end()));
    CHECK(stored(3) == *std::max_element(valid.lengths.begin(), valid.lengths.end()));
    CHECK(log.str().find("the parts' weights fitted on validation: ") != std::string::npos);
  } else {
    // A part that hurts: the model keeps the plain sum (wide_weight 1 at every length).
    CHECK(stored == xt::xarray<float>{1, 0, 1, 1});
    CHECK(log.str().find("the parts' weights fitted on validation: ") == std::string::npos);
  }
  // (The tiny validation set is nearly separable, where the NLL is flat and the fit stops early: compare
  // the NLL, not the coefficients.)
  const auto fitted = imdb::fit_length_temperature(valid.logits, valid.labels, valid.lengths);
  const auto valid_nll = [&](const imdb::LengthTemperature& t) {
    const auto p = imdb::softmax_with_temperature(valid.logits, t, valid.lengths);
    double total = 0;
    for (std::size_t i = 0; i < valid.count; ++i) total -= std::log(p(i, static_cast<std::size_t>(valid.labels[i])));
    return total / static_cast<double>(valid.count);
  };
  CHECK(valid_nll(run.temperature) == Approx(valid_nll(fitted)).margin(1e-3));
  for (std::size_t i = 0; i < valid.count; ++i) {
    const double total = valid.logits(i, 1) - valid.logits(i, 0);
    const double parts =
        valid.encoder_logits(i, 1) - valid.encoder_logits(i, 0) +
        run.model->wide_weight_at(valid.lengths[i]) * (valid.wide_logits(i, 1) - valid.wide_logits(i, 0));
    CHECK(total == Approx(parts).margin(1e-4));
  }
  // Each validation line reports both parts alone.
  const auto lines = metrics_without_timing(tmp.path / "metrics.jsonl");
  const auto epoch_line =
      std::find_if(lines.begin(), lines.end(), [](const auto& l) { return l.contains("valid_acc"); });
  REQUIRE(epoch_line != lines.end());
  CHECK(epoch_line->contains("valid_acc_encoder"));
  CHECK(epoch_line->contains("valid_acc_wide"));

  // predict uses all of it with no flag, in and out of process alike.
  const std::string review = "not bad at all , actually quite good";
  const double p = imdb::predict_proba(*run.model, run.vocab, run.config, {review}, 64, run.temperature).at(0);
  const CliResult predicted = run_imdb({"predict", "--run", tmp.path.string(), review});
  REQUIRE(predicted.code == 0);
  CHECK(parse_numbers(predicted.out).at(0) == Approx(p).margin(1e-6));
}

TEST_CASE("train_imdb --resume after an interruption ends exactly where an uninterrupted run does", "[imdb]") {
  // Plain, and with the two settings that keep state of their own: word dropout (drawn per step) and
  // the parameters' moving average (saved in the checkpoint).
  const bool with_averaging = GENERATE(false, true);
  INFO("--word-dropout and --ema: " << with_averaging);
  const auto config_of = [&](const fs::path& out) {
    imdb::Config c = tiny_config(out, 4);
    if (with_averaging) {
      c.word_dropout = 0.2;
      c.ema = 0.5;
      c.valid_fraction = 0.0;  // every epoch's model is saved: the last one is compared below
    }
    return c;
  };
  TempDir whole, interrupted;
  std::ostringstream out, log;
  imdb::train(config_of(whole.path), out, log, false);

  // Stopped in the middle of an epoch (the third, or the second without validation reviews): the
  // checkpoint of the epoch before stays, and --resume redoes the interrupted one.
  const imdb::TrainResult first =
      imdb::train(config_of(interrupted.path), out, log, false, [](std::int64_t step) { return step == 5; });
  CHECK(first.interrupted);
  REQUIRE(first.epochs.size() == (with_averaging ? 1 : 2));
  CHECK(first.steps == 5);
  CHECK(log.str().find("interrupted: stopped after step 5") != std::string::npos);
  imdb::Config resume = config_of(interrupted.path);
  resume.resume = true;
  const imdb::TrainResult second = imdb::train(resume, out, log, false);
  CHECK_FALSE(second.interrupted);
  CHECK(second.epochs.size() == 4 - first.epochs.size());

  CHECK(read_bytes(interrupted.path / "model.safetensors") == read_bytes(whole.path / "model.safetensors"));
  CHECK(tensors_of(interrupted.path / "last.ckpt.safetensors") == tensors_of(whole.path / "last.ckpt.safetensors"));
  CHECK(metrics_without_timing(interrupted.path / "metrics.jsonl") ==
        metrics_without_timing(whole.path / "metrics.jsonl"));
  if (with_averaging) {
    // The saved best model holds the averages, not the trained parameters of the checkpoint.
    const auto checkpoint = tensors_of(whole.path / "last.ckpt.safetensors");
    CHECK(checkpoint.count("extra.num_updates") == 1);
    REQUIRE(second.best_epoch == 4);
    std::size_t differ = 0;
    for (const auto& [name, bytes] : tensors_of(whole.path / "model.safetensors")) {
      differ += checkpoint.at("model." + name) != bytes;
    }
    CHECK(differ > 0);
  }

  // A flag that contradicts the saved run is refused.
  const CliResult r = run_imdb({"--out", interrupted.path.string(), "--resume", "--lr", "0.5"});
  CHECK(r.code == 2);
  CHECK(r.err == resume_conflict("train_imdb", "--lr", "0.5", "0.02", interrupted.path));
}

TEST_CASE("train_imdb --crop: training batches are cut to windows, as config.json records", "[imdb]") {
  // Every review of every batch cut to 3 tokens trains another model than the whole reviews do.
  TempDir plain_dir, crop_dir;
  imdb::Config plain = tiny_config(plain_dir.path, 2);
  imdb::Config cropped = tiny_config(crop_dir.path, 2);
  cropped.crop = 1.0;
  cropped.crop_min = cropped.crop_max = 3;
  std::ostringstream out, log;
  const imdb::TrainResult a = imdb::train(plain, out, log, false);
  const imdb::TrainResult b = imdb::train(cropped, out, log, false);
  REQUIRE(a.epochs.size() == 2);
  REQUIRE(b.epochs.size() == 2);
  CHECK(std::isfinite(b.epochs[1].train_loss));
  CHECK(a.epochs[0].train_loss != b.epochs[0].train_loss);
  const imdb::LoadedRun run = imdb::load_run(crop_dir.path);
  CHECK(run.config.crop == 1.0);
  CHECK(run.config.crop_max == 3);
  CHECK(imdb::validate([] {
          imdb::Config c;
          c.crop_min = 65;
          return c;
        }()) == "--crop-min 65 is above --crop-max 64");
}

TEST_CASE("train_imdb --clause-negation: polar clauses, half negated, train the model", "[imdb]") {
  // A corpus with "not" (the fixture has none), 8 reviews of each class, short polar sentences.
  TempDir data, plain_dir, negation_dir, no_not_dir;
  const char* positive[] = {"The acting was superb and moving.",
                            "The story is superb.",
                            "It was a superb film.",
                            "Is it good? The cast is superb.",
                            "The score was superb.",
                            "Superb, the film is.",
                            "The plot is not bad.",
                            "The ending was superb."};
  const char* negative[] = {"The acting was dreadful.", "The story is dreadful.",  "It was a dreadful film.",
                            "The cast is dreadful.",    "The score was dreadful.", "Dreadful, the film is.",
                            "The plot is not good.",    "The ending was dreadful."};
  for (const char* split : {"train", "test"}) {
    for (int i = 0; i < 8; ++i) {
      for (const auto& [label, texts] : {std::pair{"pos", positive}, {"neg", negative}}) {
        const fs::path file =
            data.path / "aclImdb" / split / label / fmt::format("{}_{}.txt", i, label[0] == 'p' ? 9 : 2);
        fs::create_directories(file.parent_path());
        std::ofstream(file) << texts[i];
      }
    }
  }
  imdb::Config plain = tiny_config(plain_dir.path, 2);
  plain.data = (data.path / "aclImdb").string();
  plain.valid_fraction = 0.25;
  plain.vocab_size = 200;  // every word
  imdb::Config negated = plain;
  negated.out = negation_dir.path.string();
  negated.clause_negation = 1.0;
  negated.polarity_margin = 0.3;  // 12 training reviews: the smoothed ratios stay small
  std::ostringstream out, log;
  const imdb::TrainResult a = imdb::train(plain, out, log, false);
  const imdb::TrainResult b = imdb::train(negated, out, log, false);
  REQUIRE(b.epochs.size() == 2);
  CHECK(std::isfinite(b.epochs[1].train_loss));
  CHECK(a.epochs[0].train_loss != b.epochs[0].train_loss);
  CHECK(log.str().find("clause negation: 2 of 20 words polar (|log-count ratio| >= 0.3)") !=
        std::string::npos);  // "superb" and "dreadful"
  CHECK(imdb::load_run(negation_dir.path).config.clause_negation == 1.0);
  // A vocabulary without "not" (the fixture's) has nothing to negate with: the run says so and goes on.
  imdb::Config no_not = tiny_config(no_not_dir.path, 1);
  no_not.clause_negation = 0.5;
  std::ostringstream log2;
  CHECK(imdb::train(no_not, out, log2, false).epochs.size() == 1);
  CHECK(log2.str().find("clause negation: off, the vocabulary has no \"not\"") != std::string::npos);
}

TEST_CASE("train_imdb config.json round-trips every setting", "[imdb]") {
  imdb::Config c;
  c.d_model = 32;
  c.pooling = "cls";
  c.betas = "0.8,0.99";
  c.valid_fraction = 0.2;
  c.schedule = "cosine";
  c.crop = 0.25;
  c.crop_min = 3;
  c.crop_max = 9;
  c.wide_negation = false;
  c.wide_negation_factor = -0.5;
  c.wide_weight_by_length = false;
  c.clause_negation = 0.5;
  c.polarity_margin = 0.8;
  CHECK(imdb::to_json(imdb::config_from_json(imdb::to_json(c))) == imdb::to_json(c));
  // The temperatures a model file's metadata holds: a bad one names the file and the key.
  CHECK(imdb::parse_length_temperature("0.5 -0.05 10 1000", "m.safetensors").b == -0.05);
  CHECK_THROWS_WITH(imdb::parse_length_temperature("0.5 -0.05 10", "m.safetensors"),
                    Catch::Contains("m.safetensors: metadata calibration.length_temperature is \"0.5 -0.05 10\": "
                                    "not four numbers"));
  imdb::Config wide;
  wide.wide_buckets = 8'000'000;
  CHECK(imdb::model_options(wide, 100).wide_weight_by_length);
  CHECK(imdb::model_options(wide, 100).wide_negation_factor == -1.0);
  c = wide;
  c.wide_negation = false;
  CHECK_FALSE(imdb::model_options(c, 100).wide_negation_factor.has_value());
  c = wide;
  c.wide_negation_factor = 0.0;
  CHECK_FALSE(imdb::model_options(c, 100).wide_negation_factor.has_value());
  c.wide_negation_factor = std::numeric_limits<double>::infinity();
  CHECK(imdb::validate(c).value_or("").find("--wide-negation-factor inf is outside [-10, 10]") != std::string::npos);
  nlohmann::json wrong = imdb::to_json(c);
  wrong["d-model"] = "wide";
  CHECK_THROWS_WITH(imdb::config_from_json(wrong),
                    Catch::Contains("\"d-model\" must be an integer, got string \"wide\""));
  CHECK_FALSE(imdb::validate(imdb::Config{}).has_value());
}

TEST_CASE("explain: saliency is the derivative of the logit along each token's own embedding", "[explain]") {
  using tapegrad::models::Pooling;
  for (Pooling pooling : {Pooling::Mean, Pooling::Max, Pooling::Cls}) {
    INFO("pooling " << tapegrad::models::pooling_name(pooling));
    auto o = tapegrad::testing::sized<tapegrad::models::TransformerClassifierOptions>(20, 8, 8, 2, 2);
    o.dim_feedforward = 12;
    o.pooling = pooling;
    tapegrad::Generator gen(11);
    imdb::WideAndDeepOptions options;  // the encoder classifier alone
    options.deep = o;
    imdb::WideAndDeep<double> model(options, gen);
    model.train();
    // Distinct ids, so scaling a token's row of the table scales that token's embedding only.
    const std::vector<std::int64_t> ids = {3, 7, 2, 9, 5, 13};
    const imdb::Explanation e = imdb::explain_ids(model, ids);
    CHECK(model.is_training());                                          // restored
    for (const auto& p : model.parameters()) CHECK_FALSE(p.has_grad());  // left as they were
    REQUIRE(e.saliency.size() == ids.size());
    REQUIRE(e.layers == 2);
    REQUIRE(e.heads == 2);
    REQUIRE(e.positions == ids.size() + (pooling == Pooling::Cls ? 1 : 0));
    for (const auto& layer : e.attention)
      for (const auto& w : layer)
        for (std::size_t q = 0; q < e.positions; ++q) {
          double sum = 0.0;
          for (std::size_t k = 0; k < e.positions; ++k) sum += w[q * e.positions + k];
          CHECK(sum == Approx(1.0).margin(1e-12));
        }

    const auto logit = [&](std::size_t token, double eps) {
      auto& weight = model.deep->embedding->weight.mutable_data();
      const auto row = static_cast<std::size_t>(ids[token]);
      std::vector<double> saved(weight.data() + row * o.d_model, weight.data() + (row + 1) * o.d_model);
      for (std::size_t k = 0; k < o.d_model; ++k) weight(row, k) = saved[k] * (1.0 + eps);
      tapegrad::NoGradGuard no_grad;
      model.eval();
      xt::xarray<std::int64_t> batch = xt::xarray<std::int64_t>::from_shape({1, ids.size()});
      std::copy(ids.begin(), ids.end(), batch.begin());
      const double value =
          model.forward(batch, xt::zeros<bool>({std::size_t{1}, ids.size()})).data()(0, std::size_t(e.predicted));
      for (std::size_t k = 0; k < o.d_model; ++k) weight(row, k) = saved[k];
      return value;
    };
    const double eps = 1e-6;
    double total = 0.0;
    for (std::size_t t = 0; t < ids.size(); ++t) {
      const double estimate = (logit(t, eps) - logit(t, -eps)) / (2 * eps);
      CHECK(e.saliency[t] == Approx(estimate).margin(1e-7).epsilon(1e-5));
      total += std::abs(e.saliency[t]);
    }
    CHECK(total > 1e-3);  // not trivially zero
    CHECK(e.logits[std::size_t(e.predicted)] == Approx(logit(0, 0.0)).margin(1e-12));
  }
}

TEST_CASE("explain and report: pages of a tiny run, with every text escaped", "[explain]") {
  TempDir tmp;
  std::ostringstream out, log;
  imdb::train(tiny_config(tmp.path, 3), out, log, false);
  const imdb::LoadedRun run = imdb::load_run(tmp.path);

  const std::string review = "A <b>great</b> & \"moving\" film</script><script>alert(1)</script> 'no'";
  const imdb::Explanation e = imdb::explain_text(*run.model, run.vocab, run.config, review, run.temperature);
  CHECK(e.tokens == tapegrad::datasets::tokenize(review));
  CHECK(e.p_positive ==
        Approx(imdb::predict_proba(*run.model, run.vocab, run.config, {review}, 64, run.temperature)[0]).margin(1e-6));
  const std::string page = imdb::explain_html(e, review, tmp.path.string());
  CHECK(page.find("<b>great") == std::string::npos);
  CHECK(page.find("alert(1)</script>") == std::string::npos);
  CHECK(page.find("A &lt;b&gt;great&lt;/b&gt; &amp; &quot;moving&quot; film&lt;/script&gt;") != std::string::npos);
  // The n-gram part, explained exactly: the parts' margins add up to the logits' margin, each distinct
  // n-gram (as the bag finds them) has its share, and the shares add up to the part's margin.
  REQUIRE(e.has_ngram_part);
  CHECK(e.encoder_margin + e.ngram_margin == Approx(e.logits[1] - e.logits[0]).margin(1e-4));
  double shares = 0.0;
  for (const auto& c : e.ngrams) shares += c.margin;
  CHECK(shares == Approx(e.ngram_margin).margin(1e-4));
  {
    xt::xarray<std::int64_t> row = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, e.ids.size()});
    std::copy(e.ids.begin(), e.ids.end(), row.begin());
    const tapegrad::BoolArray none = xt::zeros<bool>(row.shape());
    const auto marked = run.model->wide->negation.mark(row, none);
    const auto buckets = tapegrad::nn::document_ngram_buckets(marked, none, 97, 3);
    // and each negated word once more, as itself times the negation factor (on by default)
    REQUIRE(run.model->wide->negation_factor.defined());
    const auto negated_words = imdb::features::negated_word_buckets(marked, none, 97);
    CHECK(e.ngrams.size() ==
          static_cast<std::size_t>(xt::sum(xt::not_equal(buckets, 0))() + xt::sum(xt::not_equal(negated_words, 0))()));
  }
  for (std::size_t i = 1; i < e.ngrams.size(); ++i)
    CHECK(std::abs(e.ngrams[i - 1].margin) >= std::abs(e.ngrams[i].margin));
  CHECK(page.find("id=\"ngrams-up\"") != std::string::npos);
  // A word in a negation's scope reads NOT_word, with a negator and a scope end of the fixture's
  // 50-word vocabulary.
  const auto negators = imdb::features::negator_ids(run.vocab);
  const auto ends = imdb::features::scope_end_ids(run.vocab);
  REQUIRE_FALSE(negators.empty());
  REQUIRE_FALSE(ends.empty());
  const std::string negator = run.vocab.token(negators.front());
  const imdb::Explanation negated = imdb::explain_text(*run.model, run.vocab, run.config,
                                                       negator + " bad " + run.vocab.token(ends.front()) + " good");
  CHECK(std::any_of(negated.ngrams.begin(), negated.ngrams.end(), [](const auto& c) { return c.text == "NOT_bad"; }));
  CHECK(std::any_of(negated.ngrams.begin(), negated.ngrams.end(),
                    [&](const auto& c) { return c.text == negator + " NOT_bad"; }));
  CHECK(std::none_of(negated.ngrams.begin(), negated.ngrams.end(), [](const auto& c) { return c.text == "NOT_good"; }));
  const std::string bad_negated =
      fmt::format("bad x {:.2f} (negated)", static_cast<double>(run.model->wide->negation_factor.data()(0)));
  CHECK(std::count_if(negated.ngrams.begin(), negated.ngrams.end(),
                      [&](const auto& c) { return c.text == bad_negated; }) == 1);
  double negated_shares = 0.0;
  for (const auto& c : negated.ngrams) negated_shares += c.margin;
  CHECK(negated_shares == Approx(negated.ngram_margin).margin(1e-4));
  // Exactly the page's own three scripts (error handler, data, drawing) end.
  std::size_t script_ends = 0;
  for (std::size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1))
    ++script_ends;
  CHECK(script_ends == 3);

  // Too long for the run's max_len (32): truncated as predict does.
  std::string long_review;
  for (int i = 0; i < 50; ++i) long_review += "word" + std::to_string(i) + " ";
  const imdb::Explanation cut = imdb::explain_text(*run.model, run.vocab, run.config, long_review);
  CHECK(cut.tokens.size() == 32);
  CHECK(cut.total_tokens == 50);
  CHECK(cut.tokens.back() == "word49");  // head+tail keeps the end

  // The review on stdin, the page where --output says.
  const fs::path output = tmp.path / "stdin.html";
  const CliResult piped = run_imdb({"explain", "--run", tmp.path.string(), "--output", output.string()}, review);
  CHECK(piped.code == 0);
  CHECK(piped.out ==
        fmt::format("P(positive) = {:.6f} ({} tokens); wrote {}\n", e.p_positive, e.tokens.size(), output.string()));
  std::ifstream written(output);
  CHECK(std::string(std::istreambuf_iterator<char>(written), {}) == page);

  const CliResult empty = run_imdb({"explain", "--run", tmp.path.string(), " "});
  CHECK(empty.code == 2);
  CHECK(empty.err == "train_imdb: explain: the review has no tokens\n");

  const std::string report = imdb::report_html(tmp.path);
  std::size_t valid_points = 0;
  const auto series = report.find("data-series=\"valid_loss\" data-points=\"3\"");
  CHECK(series != std::string::npos);
  for (std::size_t at = report.find("<circle", series); at < report.find("</g>", series);
       at = report.find("<circle", at + 1))
    ++valid_points;
  CHECK(valid_points == 3);
  CHECK(report.find("id=\"test-score\"") != std::string::npos);
  CHECK(report.find("<p id=\"contrast-score\">Contrast pairs (examples/imdb/contrast_pairs.tsv): both members "
                    "right in") != std::string::npos);
  CHECK(report.find("of 50 pairs.</p>") != std::string::npos);  // the development pairs
  CHECK(report.find("Sinusoidal positional encoding") != std::string::npos);
  CHECK(report.find("\"pe\":{\"dims\":8,\"positions\":32,") != std::string::npos);

  // A learned table is read from the trained model.
  TempDir learned;
  imdb::Config with_learned = tiny_config(learned.path, 1);
  with_learned.pos = "learned";
  imdb::train(with_learned, out, log, false);
  const std::string learned_report = imdb::report_html(learned.path);
  CHECK(learned_report.find("Learned positional embedding (from model.safetensors)") != std::string::npos);
  const auto table = imdb::load_run(learned.path).model->deep->learned->weight.data();
  CHECK(learned_report.find(fmt::format("\"values\":[{},", imdb::html::round_significant(table(0, 0), 3))) !=
        std::string::npos);
}

TEST_CASE("html helpers: escaping, JSON inside a script, float32 tables in base64", "[explain]") {
  CHECK(imdb::html::escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  const std::string json = imdb::html::script_json({{"text", "</script><!-- & \xff"}});
  CHECK(json == "{\"text\":\"\\u003c/script\\u003e\\u003c!-- \\u0026 \xEF\xBF\xBD\"}");
  // Python: base64.b64encode(struct.pack('<3f', 1.0, -2.5, 0.0)), and with 1 and 2 floats (padding).
  CHECK(imdb::html::float32_base64({1.0, -2.5, 0.0}) == "AACAPwAAIMAAAAAA");
  CHECK(imdb::html::float32_base64({0.1}) == "zczMPQ==");
  CHECK(imdb::html::float32_base64({0.1, 3.0}) == "zczMPQAAQEA=");
  CHECK(imdb::html::float32_base64({}).empty());
  CHECK(imdb::html::round_significant(0.000123456, 3) == 0.000123);
}

TEST_CASE("fit_part_weights: one weight per part, or the n-gram part's weight by length", "[imdb]") {
  // Synthetic validation reviews: the encoder's margin is worth the same at every length, the n-gram
  // part's margin grows with ln n faster than its evidence, so its right weight falls with the length.
  imdb::EvalResult r;
  tapegrad::Generator gen(21);
  const std::size_t n = 4000;
  r.count = n;
  r.encoder_logits = xt::zeros<double>({n, std::size_t{2}});
  r.wide_logits = xt::zeros<double>({n, std::size_t{2}});
  r.encoder_accuracy = r.wide_accuracy = 0.5;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t length = 10 + (i * 37) % 990;
    const double signal = gen.normal(), e = signal + gen.normal(), w = signal + 0.5 * gen.normal();
    const double scale = std::log(static_cast<double>(length));  // the n-gram part: overconfident when long
    const double truth = 0.8 * e + 2.0 * w;
    r.labels.push_back(gen.uniform() < 1.0 / (1.0 + std::exp(-truth)) ? 1 : 0);
    r.lengths.push_back(length);
    r.encoder_logits(i, 1) = e;
    r.wide_logits(i, 1) = w * scale;
  }
  const auto one = imdb::fit_part_weights(r);
  REQUIRE(one);
  CHECK(one->wide.b == 0.0);
  const auto by_length = imdb::fit_part_weights(r, true);
  REQUIRE(by_length);
  CHECK(by_length->wide.shortest == 10.0);
  CHECK(by_length->wide.longest == 999.0);
  CHECK(by_length->wide.b < 0.0);  // the weight falls with the length
  // The weight at each length is about 2 / ln n, the truth: checked at three lengths.
  for (std::size_t length : {20, 100, 500})
    CHECK(by_length->wide.inverse(length) == Approx(2.0 / std::log(static_cast<double>(length))).epsilon(0.25));
  CHECK(by_length->wide.inverse(1) == by_length->wide.inverse(10));  // clamped to the lengths fitted on
  CHECK(by_length->accuracy >= one->accuracy);
  CHECK(imdb::describe(*by_length).find(" ln n) x n-grams") != std::string::npos);
  CHECK(imdb::describe(*one).find(" ln n") == std::string::npos);
  // Without a wide part there is nothing to weigh.
  imdb::EvalResult alone = r;
  alone.encoder_accuracy.reset();
  CHECK_FALSE(imdb::fit_part_weights(alone, true));
}
