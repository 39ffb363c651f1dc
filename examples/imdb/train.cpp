#include "examples/imdb/train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "examples/common/batching.hpp"
#include "examples/common/commands.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/trainer_options.hpp"
#include "examples/imdb/data.hpp"
#include "examples/imdb/features/clause_negation.hpp"
#include "examples/imdb/features/log_count_ratio.hpp"
#include "examples/imdb/model.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/random_crop.hpp"
#include "tapegrad/datasets/text/word_dropout.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/masked_lm.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/optim/ema.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/optim/sgd.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/timing.hpp"

namespace imdb {

namespace fs = std::filesystem;
namespace ds = tapegrad::datasets;
namespace optim = tapegrad::optim;
namespace tr = tapegrad::train;

namespace {

// Adam or AdamW with the flags --lr, --betas, --eps and --weight-decay.
template <typename Adam, typename Options>
std::unique_ptr<optim::Optimizer<float>> make_adam(const Config& c, std::vector<tapegrad::Tensor<float>> params) {
  Options o;
  o.lr = c.lr;
  o.betas = parse_betas(c.betas);
  o.eps = c.eps;
  o.weight_decay = c.weight_decay;
  return std::make_unique<Adam>(std::move(params), o);
}

std::unique_ptr<optim::Optimizer<float>> make_optimizer(const Config& c, std::vector<tapegrad::Tensor<float>> params) {
  if (c.optimizer == "sgd") {
    optim::SGDOptions o{c.lr};
    o.momentum = c.momentum;
    o.weight_decay = c.weight_decay;
    return std::make_unique<optim::SGD<float>>(std::move(params), o);
  }
  if (c.optimizer == "adam") return make_adam<optim::Adam<float>, optim::AdamOptions>(c, std::move(params));
  return make_adam<optim::AdamW<float>, optim::AdamWOptions>(c, std::move(params));
}

optim::Schedule make_schedule(const Config& c, std::int64_t total_steps, std::int64_t steps_per_epoch) {
  if (c.schedule == "constant") return optim::LinearWarmup(c.lr, c.warmup);
  if (c.schedule == "inv-sqrt") return optim::InverseSqrt(c.lr, c.warmup);
  // --lr is the paper's factor: the peak is lr / sqrt(d_model * warmup).
  if (c.schedule == "noam") return optim::Noam(c.d_model, c.warmup, c.lr);
  if (c.warmup >= total_steps) {
    throw UsageError(fmt::format("--warmup {} must be less than the {} training steps (--epochs {} x {} batches)",
                                 c.warmup, total_steps, c.epochs, steps_per_epoch));
  }
  if (c.schedule == "cosine") return optim::CosineDecay(c.lr, total_steps, c.warmup);
  return optim::LinearDecay(c.lr, total_steps, c.warmup);
}

// A JSON scalar as a user types it on the command line (strings unquoted).
std::string flag_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// --init-from: the pretrained run's embedding and encoder, every mismatch with the classifier reported
// (names and shapes from the file; the activation and heads, which no shape shows, from its config.json).
void init_from_pretrained(Model& model, const Config& config, tr::Progress& progress) {
  const fs::path dir = config.init_from;
  for (const char* name : {tr::RunDirectory::kConfig, kVocabFile, tr::RunDirectory::kModel}) {
    if (!fs::exists(dir / name)) throw UsageError(fmt::format("--init-from {} has no {}", dir.string(), name));
  }
  std::vector<std::string> problems;
  const nlohmann::json pretrained = tr::RunDirectory(dir).read_config();
  const std::pair<const char*, nlohmann::json> same[] = {{"activation", config.activation}, {"heads", config.heads}};
  for (const auto& [key, ours] : same) {
    if (pretrained.contains(key) && pretrained.at(key) != ours) {
      problems.push_back(fmt::format("--{} {} here but {} in the pretrained run", key, flag_text(ours),
                                     flag_text(pretrained.at(key))));
    }
  }
  std::vector<std::string> loaded;
  try {
    loaded = tapegrad::models::load_pretrained_encoder(
        *model.deep, tapegrad::io::safetensors::File((dir / tr::RunDirectory::kModel).string()));
  } catch (const std::runtime_error& e) {
    problems.push_back(e.what());
  }
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += "\n  " + p;
    throw UsageError(fmt::format("--init-from {} does not fit this classifier:{}", dir.string(), text));
  }
  progress.message(fmt::format("--init-from {}: loaded {} tensors of the embedding and encoder; the head is fresh",
                               dir.string(), loaded.size()));
}

// Naive Bayes' log-count ratios of the training reviews (as read, before word dropout) over the n-gram
// buckets of `table_buckets` rows up to max_n, each review's ids read through `features`.
template <typename Features>
features::NgramLogCountRatio count_ngrams(const ds::EncodedDataset& train, std::size_t table_buckets, std::size_t max_n,
                                          const Features& features) {
  features::NgramLogCountRatio counts(table_buckets, max_n);
  constexpr std::size_t kChunk = 256;
  for (std::size_t begin = 0; begin < train.size(); begin += kChunk) {
    std::vector<std::size_t> indices(std::min(kChunk, train.size() - begin));
    std::iota(indices.begin(), indices.end(), begin);
    const ds::Batch batch = ds::collate(train, indices);
    counts.add(features(batch), batch.padding_mask, batch.labels);
  }
  return counts;
}

// --wide-nb: NBSVM's feature scale, the ratio of every bucket of the wide part. A resumed run has it in
// its checkpoint.
void fit_wide_feature_scale(Model& model, const ds::EncodedDataset& train, tr::Progress& progress) {
  const tr::Stopwatch watch;
  // The same features the bag reads: with negation marking, over the marked ids.
  const auto counts = count_ngrams(train, model.wide->num_buckets, model.wide->max_n, [&](const ds::Batch& batch) {
    return model.wide->negation.mark(batch.ids, batch.padding_mask);
  });
  model.wide->set_feature_scale(counts.ratio(1.0));
  progress.message(
      fmt::format("--wide-nb: log-count ratios of {} n-gram buckets from {} + {} training reviews in {:.1f} s",
                  model.wide->num_buckets, counts.documents(1), counts.documents(0), watch.seconds()));
}

// --ngram-init nb: the encoder's n-gram table (one column, fixed) holds each bucket's ratio, divided by
// sqrt(d_model) because the classifier multiplies its embeddings by sqrt(d_model): a bigram's ratio then
// enters the encoder at the scale of a token embedding, times the learned projection. A resumed run has
// the table in its checkpoint.
void fit_ngram_table(Model& model, const Config& config, const ds::EncodedDataset& train, tr::Progress& progress) {
  const tr::Stopwatch watch;
  auto& ngrams = *model.deep->ngrams;
  const auto counts =
      count_ngrams(train, ngrams.num_buckets, ngrams.max_n, [](const ds::Batch& batch) { return batch.ids; });
  const auto ratio = counts.ratio(1.0, static_cast<std::size_t>(config.ngram_min_docs));
  const double scale = 1.0 / std::sqrt(static_cast<double>(config.d_model));
  auto& table = ngrams.weight.mutable_data();
  std::size_t kept = 0;
  for (std::size_t b = 0; b < ngrams.num_buckets; ++b) {
    table(b, 0) = static_cast<float>(scale * ratio(b));
    kept += ratio(b) != 0.0;
  }
  progress.message(fmt::format(
      "--ngram-init nb: the n-gram table holds the log-count ratios of {} buckets held by {} or more of the {} + {} "
      "training reviews ({:.1f} s)",
      kept, config.ngram_min_docs, counts.documents(1), counts.documents(0), watch.seconds()));
}

// What a new run's model reads from the training reviews before its first step (a resumed run has it in
// its checkpoint).
void fit_statistics(Model& model, const Config& config, const ds::EncodedDataset& train, tr::Progress& progress) {
  if (model.wide && model.wide->scale.defined()) fit_wide_feature_scale(model, train, progress);
  if (model.deep->ngrams && config.ngram_init == "nb") fit_ngram_table(model, config, train, progress);
}

// "N parameters (M trained)": a fixed n-gram table counts, but is not trained.
std::string parameter_counts(const Model& model) {
  std::size_t trained = 0;
  for (const auto& p : model.parameters()) trained += p.requires_grad() ? p.numel() : 0;
  return fmt::format("{} parameters ({} trained)", model.num_parameters(), trained);
}

// NAME_encoder and NAME_wide: each part's accuracy alone, when the model has both parts.
void put_part_accuracies(nlohmann::json& line, const std::string& name, const EvalResult& r) {
  if (!r.encoder_accuracy || !r.wide_accuracy) return;
  line[name + "_encoder"] = *r.encoder_accuracy;
  line[name + "_wide"] = *r.wide_accuracy;
}

// "encoder alone X%, n-grams alone Y%" when the model has both parts, else "".
std::string parts_alone(const EvalResult& r) {
  if (!r.encoder_accuracy || !r.wide_accuracy) return "";
  return fmt::format("encoder alone {:.2f}%, n-grams alone {:.2f}%", 100.0 * *r.encoder_accuracy,
                     100.0 * *r.wide_accuracy);
}

// The reviews read, split and encoded with the run's vocabulary (built, or a resumed run's, or
// --init-from's).
struct Prepared {
  ds::Vocabulary vocab;
  EncodedSplits data;
};

Prepared prepare_data(const Config& config, const tr::RunDirectory& run, tr::Progress& progress, TrainResult& result) {
  const RawData raw = read_data(config.data, config.no_download);
  progress.message(fmt::format("data: {} ({}): {} train + {} test reviews read in {:.1f} s", raw.path.string(),
                               raw.source, raw.reviews.train.size(), raw.reviews.test.size(), raw.seconds));
  const tr::Stopwatch prep;
  const auto split = split_of(raw, config);
  ds::Vocabulary vocab = config.resume               ? ds::Vocabulary::load(run.file(kVocabFile))
                         : !config.init_from.empty() ? ds::Vocabulary::load(fs::path(config.init_from) / kVocabFile)
                                                     : build_vocabulary(raw, split, config);
  EncodedSplits data = encode_splits(raw, split, vocab, config);
  result.data_seconds = raw.seconds + prep.seconds();
  progress.message(
      fmt::format("vocabulary: {} tokens; encoded {} train / {} valid / {} test reviews (max-len {}, "
                  "truncate {}); data ready in {:.1f} s",
                  vocab.size(), data.train.size(), data.valid.size(), data.test.size(), config.max_len, config.truncate,
                  result.data_seconds));
  return {std::move(vocab), std::move(data)};
}

// Counterfactual negation, with word polarities counted on the training reviews alone.
std::optional<features::ClauseNegation> make_clause_negation(const Config& config, const ds::Vocabulary& vocab,
                                                             const ds::EncodedDataset& train, tr::Progress& progress) {
  if (config.clause_negation == 0.0) return std::nullopt;
  if (!features::ClauseNegation::can_negate(vocab)) {
    progress.message("clause negation: off, the vocabulary has no \"not\"");
    return std::nullopt;
  }
  // A stronger prior than naive Bayes' usual 1, so that a word seen in a handful of reviews of one label
  // does not count as polar.
  constexpr double kPolaritySmoothing = 10.0;
  std::optional<features::ClauseNegation> negation;
  negation.emplace(vocab, features::token_log_count_ratios(train, vocab.size(), kPolaritySmoothing),
                   features::ClauseNegationOptions{config.clause_negation, config.polarity_margin});
  progress.message(fmt::format("clause negation: {} of {} words polar (|log-count ratio| >= {})",
                               negation->polar_words(), vocab.size(), config.polarity_margin));
  return negation;
}

tr::TrainerOptions trainer_options(const Config& config, std::int64_t steps_per_epoch,
                                   const std::function<bool(std::int64_t step)>& stop_after_step) {
  return examples::trainer_options(config, config.epochs, steps_per_epoch,
                                   make_schedule(config, steps_per_epoch * config.epochs, steps_per_epoch),
                                   stop_after_step);
}

// One step's loss on this rank's rows of the batch, after word dropout, crops and clause negation (drawn
// for the whole batch, seeded by the step).
tr::StepOutput<float> step_loss(Model& model, ds::Batch batch, const Config& config,
                                const std::optional<features::ClauseNegation>& clause_negation,
                                const tr::Replicas& replicas, std::int64_t step, const tr::MicroBatch& micro) {
  const auto seed = static_cast<std::uint64_t>(config.seed), draw = static_cast<std::uint64_t>(step);
  ds::word_dropout(batch.ids, batch.padding_mask, config.word_dropout, ds::Vocabulary::unk_id, seed, draw);
  ds::random_crop(batch.ids, batch.padding_mask, crop_options(config), ds::Vocabulary::pad_id, seed, draw);
  if (clause_negation) {
    clause_negation->apply(batch.ids, batch.padding_mask, batch.labels, ds::Vocabulary::pad_id, seed, draw);
  }
  // The micro-batch's rows, then this rank's part of them (ranks hold one row more or less). The Trainer
  // weighs each micro-batch's mean by its count: on several ranks, the micro-batch's rows per rank, and
  // each rank's mean weighs its share of them, so that the ranks' average gradient is the micro-batch's.
  double share = 1.0, count = static_cast<double>(batch.indices.size());
  if (replicas.size > 1 || micro.count > 1) {
    std::vector<std::size_t> rows(batch.indices.size());
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    rows = tr::micro_batch_rows(rows, micro);
    count = static_cast<double>(rows.size());
    if (replicas.size > 1) {
      rows = tr::rank_rows(rows, replicas.size, replicas.rank);
      count /= replicas.size;
      share = static_cast<double>(rows.size()) / count;
      if (rows.empty()) {
        tr::StepOutput<float> output;
        output.loss = tr::empty_share_loss<float>();
        output.count = count;
        return output;
      }
    }
    batch = ds::take_rows(batch, rows);
  }
  const auto parts = model.forward_parts(batch.ids, batch.padding_mask);
  const auto logits = parts.total();
  tr::StepOutput<float> output;
  output.loss = parts.wide.defined() && config.wide_loss == "separate"
                    ? tapegrad::add(tapegrad::cross_entropy(parts.deep, batch.labels),
                                    tapegrad::cross_entropy(parts.wide, batch.labels))
                    : tapegrad::cross_entropy(logits, batch.labels);
  const std::size_t rows = batch.indices.size();
  const auto& l = logits.data();
  for (std::size_t r = 0; r < rows; ++r) {
    output.correct += ((l(r, 1) > l(r, 0) ? 1 : 0) == batch.labels(r)) ? 1 : 0;
  }
  // The tokens the model read: a crop or a clause is shorter than its review.
  output.tokens = static_cast<double>(std::count(batch.padding_mask.begin(), batch.padding_mask.end(), false));
  output.count = count;
  if (share != 1.0) output.loss = tapegrad::mul(output.loss, static_cast<float>(share));
  return output;
}

// A validation, scored as the model will predict: with its parts weighted as fitted after training.
tr::Evaluation validation(Model& model, const ds::EncodedDataset& valid_set, std::size_t batch_size,
                          std::vector<EvalResult>& validations) {
  const EvalResult valid = evaluate(model, valid_set, batch_size, tr::interrupt_requested);
  const auto finite = [](const xt::xarray<double>& x) {
    return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
  };
  if (!finite(valid.logits) || !finite(valid.encoder_logits) || !finite(valid.wide_logits))
    throw tr::NonFiniteValidation("the validation logits are not finite");
  validations.push_back(valid);
  tr::Evaluation e;
  e.score = valid.accuracy;  // NaN without validation reviews: every epoch's model is then kept
  e.metrics = {{"valid_loss", valid.loss}, {"valid_acc", valid.accuracy}};
  e.summary = fmt::format("valid loss {:.4f} acc {:.2f}%", valid.loss, 100.0 * valid.accuracy);
  if (const auto weights = fit_part_weights(valid, model.options.wide_weight_by_length)) {
    e.score = weights->accuracy;
    e.metrics["valid_acc_sum"] = valid.accuracy;
    e.metrics["valid_acc"] = weights->accuracy;
    put_part_accuracies(e.metrics, "valid_acc", valid);
    e.summary = fmt::format("valid loss {:.4f} acc {:.2f}% (weighted {}; {})", valid.loss, 100.0 * weights->accuracy,
                            describe(*weights), parts_alone(valid));
  }
  if (model.wide && model.wide->negation_factor.defined()) {
    const double factor = static_cast<double>(model.wide->negation_factor.data()(0));
    e.metrics["negation_factor"] = factor;
    e.summary += fmt::format("; negation factor {:.3f}", factor);
  }
  e.stopped = valid.stopped;
  return e;
}

// --ema: the averaged parameters are validated and saved as the best model; the checkpoint keeps the
// trained ones and the averages, so that --resume continues both.
void average_parameters(optim::ExponentialMovingAverage<float>& ema, tr::TrainerHooks<float>& hooks) {
  hooks.after_step = [&ema] { ema.update(); };
  hooks.evaluation_scope = [&ema] {
    return std::static_pointer_cast<void>(
        std::make_shared<optim::ExponentialMovingAverage<float>::AveragedParameters>(ema));
  };
  hooks.extra_state = [&ema] { return ema.state_dict(); };
  hooks.load_extra_state = [&ema](const tapegrad::StateDict<float>& state) { ema.load_state_dict(state); };
}

// The trainer's outcome in result: an EpochRecord per validation and the best one.
void take_outcome(const tr::TrainerResult& trained, const std::vector<EvalResult>& validations,
                  std::int64_t steps_per_epoch, TrainResult& result) {
  result.interrupted = trained.interrupted;
  result.logged_losses = trained.logged_losses;
  for (std::size_t i = 0; i < trained.validations.size(); ++i) {
    const tr::ValidationRecord& v = trained.validations[i];
    EpochRecord record;
    record.epoch = v.step / steps_per_epoch;
    record.train_loss = v.train_loss;
    record.train_accuracy = v.train_accuracy;
    record.valid = validations[i];
    record.seconds = v.train_seconds;
    record.tokens_per_second = v.tokens_per_second;
    result.epochs.push_back(record);
  }
  result.steps = trained.step;
  result.best_epoch = trained.best_step / steps_per_epoch;
  result.best_valid_accuracy = trained.best_score;
  const auto best_loss = trained.best_metrics.find("valid_loss");
  result.best_valid_loss = best_loss != trained.best_metrics.end() && best_loss->is_number()
                               ? best_loss->get<double>()
                               : std::numeric_limits<double>::quiet_NaN();
  result.train_seconds = trained.train_seconds;
  result.train_tokens_per_second = trained.train_tokens / std::max(trained.train_seconds, 1e-9);
}

// Temperature scaling (Guo et al. 2017) that makes the best model's probabilities honest, fitted on the
// validation reviews and kept in the model file's metadata for predict. It depends on the review's
// length: the n-gram part sums more evidence the longer the review, and with one temperature the
// validation reviews of 30-120 tokens came out underconfident and those above 500 overconfident. The
// best model is loaded into `model` first; without validation reviews the temperature is 1.
LengthTemperature calibrate(Model& model, const ds::EncodedDataset& valid_set, std::size_t batch_size,
                            const tr::RunDirectory& run, tr::Progress& progress, TrainResult& result) {
  auto metadata = tr::load_model(run.model(), model);
  LengthTemperature temperature;
  if (valid_set.size() == 0) return temperature;
  const EvalResult valid = evaluate(model, valid_set, batch_size, tr::interrupt_requested);
  if (valid.stopped) return temperature;
  // With a wide part, the weights of the two parts (a, b(n)) that fit the validation reviews best:
  // logits a * encoder + b(n) * wide = (encoder + (b(n) / a) * wide) / (1 / a), the wide weight and the
  // temperature. Weights that are not both positive (a part that hurts) keep the plain sum.
  const auto weights = fit_part_weights(valid, model.options.wide_weight_by_length);
  xt::xarray<double> logits = valid.logits;
  if (weights && weights->encoder > 0 && weights->wide.problem().empty()) {
    model.set_wide_weight(weights->wide.a / weights->encoder, weights->wide.b / weights->encoder,
                          weights->wide.shortest, weights->wide.longest);
    for (std::size_t i = 0; i < valid.count; ++i) {  // what the model now computes
      const double w = static_cast<double>(model.wide_weight_at(valid.lengths[i]));
      for (std::size_t c = 0; c < 2; ++c) logits(i, c) = valid.encoder_logits(i, c) + w * valid.wide_logits(i, c);
    }
    progress.message("the parts' weights fitted on validation: " + describe(*weights));
  }
  temperature = fit_length_temperature(logits, valid.labels, valid.lengths);
  progress.message("the temperature fitted on validation: " + describe(temperature));
  metadata[kLengthTemperatureKey] = temperature.to_string();
  tr::save_model(run.model(), model, metadata);
  // How the model reads short texts, on validation data: one short window of each review (the contrast
  // pairs are a test, never a criterion).
  EvalResult windows = evaluate(model, valid_set, batch_size, tr::interrupt_requested, kValidWindows);
  if (!windows.stopped) {
    result.valid_window_ece = calibration_of(windows, temperature).calibrated.expected_calibration_error;
    result.valid_windows = std::move(windows);
  }
  return temperature;
}

// metrics.jsonl's test line: the test score, the temperature, calibration, the short windows and the
// contrast pairs.
nlohmann::json test_line(const TrainResult& result, const LengthTemperature& temperature,
                         const tr::TrainerResult& trained) {
  nlohmann::json reliability = nlohmann::json::array();
  for (const auto& bin : result.test_calibration.calibrated.bins) {
    reliability.push_back({{"lower", bin.lower},
                           {"upper", bin.upper},
                           {"count", bin.count},
                           {"confidence", bin.mean_confidence},
                           {"accuracy", bin.accuracy}});
  }
  nlohmann::json line = {{"step", trained.step},
                         {"split", "test"},
                         {"best_epoch", result.best_epoch},
                         {"test_loss", result.test.loss},
                         {"test_acc", result.test.accuracy},
                         {"temperature_a", temperature.a},
                         {"temperature_b", temperature.b},
                         {"temperature_shortest", temperature.shortest},
                         {"temperature_longest", temperature.longest},
                         {"test_ece", result.test_calibration.calibrated.expected_calibration_error},
                         {"test_ece_uncalibrated", result.test_calibration.uncalibrated.expected_calibration_error},
                         {"test_short_reviews", result.test_calibration.short_count},
                         {"test_short_ece", result.test_calibration.short_ece},
                         {"test_short_ece_uncalibrated", result.test_calibration.short_ece_uncalibrated},
                         {"reliability", reliability},
                         {"elapsed", trained.train_seconds}};
  put_part_accuracies(line, "test_acc", result.test);
  if (result.valid_windows) {
    line["valid_window_acc"] = result.valid_windows->accuracy;
    line["valid_window_ece"] = result.valid_window_ece;
    put_part_accuracies(line, "valid_window_acc", *result.valid_windows);
  }
  if (result.contrast) {
    line["contrast_pairs"] = result.contrast->pairs;
    line["contrast_pair_acc"] = result.contrast->accuracy;
  }
  if (result.contrast_dev) {
    line["dev_contrast_pairs"] = result.contrast_dev->pairs;
    line["dev_contrast_pair_acc"] = result.contrast_dev->accuracy;
  }
  return line;
}

// The test set, once, with the best-validation model, and the contrast pairs; false when Ctrl-C stopped
// it.
bool evaluate_test(Model& model, const Prepared& prepared, const Config& config, const LengthTemperature& temperature,
                   const tr::RunDirectory& run, tr::Progress& progress, TrainResult& result) {
  result.test =
      evaluate(model, prepared.data.test, static_cast<std::size_t>(config.batch_size), tr::interrupt_requested);
  if (result.test.stopped) {
    progress.message(
        "interrupted during the test evaluation; the run's files are complete, evaluate them with "
        "`train_imdb evaluate --run " +
        run.dir().string() + "`");
    return false;
  }
  result.test_calibration = calibration_of(result.test, temperature);
  if (const auto pairs_file = default_contrast_pairs_file()) {
    result.contrast = contrast_pairs_of(model, prepared.vocab, config, *pairs_file);
  }
  if (const auto pairs_file = development_contrast_pairs_file()) {
    result.contrast_dev = contrast_pairs_of(model, prepared.vocab, config, *pairs_file);
  }
  return true;
}

}  // namespace

tapegrad::datasets::CropOptions crop_options(const Config& config) {
  return {config.crop, static_cast<std::size_t>(config.crop_min), static_cast<std::size_t>(config.crop_max)};
}

TrainResult train(const Config& settings, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t step)>& stop_after_step, const Parallel& parallel) {
  const bool writer = parallel.writes_files();
  const tr::Stopwatch wall;
  const tr::RunDirectory run = run_directory(settings.out);
  tr::Progress progress(log, interactive, static_cast<std::size_t>(settings.log_every));
  Config config = examples::start_training(flags(), settings, run,
                                           {tr::RunDirectory::kCheckpoint, tr::RunDirectory::kConfig, kVocabFile},
                                           &validate, progress);
  TrainResult result;
  const Prepared prepared = prepare_data(config, run, progress, result);
  const EncodedSplits& data = prepared.data;

  // Model and optimization. Several ranks must agree on the settings and on the vocabulary.
  parallel.verify_same_settings(to_json(config), {"data"});
  parallel.verify_same_vocabulary(prepared.vocab);
  const auto model = make_model(config, prepared.vocab);
  if (!config.init_from.empty() && !config.resume) init_from_pretrained(*model, config, progress);
  if (!config.resume) fit_statistics(*model, config, data.train, progress);
  // Several ranks: the same model everywhere (checked), gradients averaged; each trains its rows.
  const tr::Replicas replicas = parallel.replicas(*model, config.zero);
  const auto optimizer =
      parallel.optimizer(model->parameters(), [&](auto params) { return make_optimizer(config, std::move(params)); });
  const auto clause_negation = make_clause_negation(config, prepared.vocab, data.train, progress);
  ds::DataLoader loader(data.train, examples::batch_options(config));
  const auto steps_per_epoch = static_cast<std::int64_t>(loader.size());
  std::optional<optim::ExponentialMovingAverage<float>> ema;
  if (config.ema > 0) ema.emplace(model->parameters(), config.ema);
  tr::TrainerOptions options = trainer_options(config, steps_per_epoch, stop_after_step);

  // The run folder, only once the data and the settings are known to work.
  if (!config.resume && writer) {
    examples::start_run_folder(run, config.overwrite, to_json(config), progress,
                               [&] { prepared.vocab.save(run.file(kVocabFile)); });
  }

  const auto batch_size = static_cast<std::size_t>(config.batch_size);
  std::vector<EvalResult> validations;  // the EvalResult of each of the trainer's validations
  tr::TrainerHooks<float> hooks;
  hooks.begin_epoch = [&](std::int64_t epoch) { loader.set_epoch(static_cast<std::uint64_t>(epoch)); };
  hooks.forward = [&](std::int64_t step, std::int64_t b, const tr::MicroBatch& micro) {
    return step_loss(*model, loader.batch(static_cast<std::size_t>(b)), config, clause_negation, replicas, step, micro);
  };
  hooks.validate = [&] { return validation(*model, data.valid, batch_size, validations); };
  if (ema) average_parameters(*ema, hooks);
  hooks.replicas = replicas;
  tr::Trainer<float> trainer(run, *model, *optimizer, std::move(options), std::move(hooks), progress);
  if (data.valid.size() == 0) {
    progress.message(
        "no validation reviews (--valid-fraction too small for this data): the last epoch's model is kept");
  }
  progress.message(fmt::format("model: {}; {} steps of {} reviews per epoch, {} epochs", parameter_counts(*model),
                               steps_per_epoch, config.batch_size, config.epochs));
  if (replicas.size > 1) {
    progress.message(parallel.split_line(config.threads, static_cast<std::int64_t>(config.batch_size)));
  }
  const tr::TrainerResult trained = trainer.run();
  // Everything after training (the parts' weights, the temperature, the test set) in the precision the
  // run trained and validated in.
  const tapegrad::autocast evaluation_precision(config.precision_resolved == "bf16");
  take_outcome(trained, validations, steps_per_epoch, result);
  if (result.interrupted || !writer) {
    result.wall_seconds = wall.seconds();
    return result;
  }
  const LengthTemperature temperature = calibrate(*model, data.valid, batch_size, run, progress, result);
  if (!evaluate_test(*model, prepared, config, temperature, run, progress, result)) {
    result.interrupted = true;
    result.wall_seconds = wall.seconds();
    return result;
  }
  trainer.metrics().write(test_line(result, temperature, trained));
  result.wall_seconds = wall.seconds();
  print_summary(out, config, result);
  return result;
}

void print_summary(std::ostream& out, const Config& config, const TrainResult& r) {
  const fs::path dir = config.out;
  const auto pairs_line = [](const char* which, const std::optional<ContrastResult>& c) {
    return c ? fmt::format("{}: both members right in {} of {} ({:.1f}%)\n", which, c->both_right, c->pairs,
                           100.0 * c->accuracy)
             : std::string();
  };
  out << (std::isnan(r.best_valid_accuracy)
              ? fmt::format("no validation set: the model of the last epoch ({}) was kept\n", r.best_epoch)
              : fmt::format("best epoch {} of {}: valid accuracy {:.2f}% (loss {:.4f})\n", r.best_epoch, config.epochs,
                            100.0 * r.best_valid_accuracy, r.best_valid_loss))
      << fmt::format("test accuracy {:.2f}% (loss {:.4f}) on {} reviews, evaluated once with the best model\n",
                     100.0 * r.test.accuracy, r.test.loss, r.test.count)
      << (r.test.encoder_accuracy && r.test.wide_accuracy
              ? fmt::format("the parts alone on the test set: encoder {:.2f}%, n-grams {:.2f}%\n",
                            100.0 * *r.test.encoder_accuracy, 100.0 * *r.test.wide_accuracy)
              : std::string())
      << fmt::format(
             "calibration on the test set: expected calibration error {:.2f}% with the temperature fitted on "
             "validation ({:.2f}% without); {} short reviews (under {} tokens): {:.2f}% ({:.2f}% "
             "without)\n",
             100.0 * r.test_calibration.calibrated.expected_calibration_error,
             100.0 * r.test_calibration.uncalibrated.expected_calibration_error, r.test_calibration.short_count,
             kShortReviewTokens, 100.0 * r.test_calibration.short_ece,
             100.0 * r.test_calibration.short_ece_uncalibrated)
      << (r.valid_windows
              ? fmt::format("validation, one window of {}-{} tokens of each review: accuracy {:.2f}%{}, expected "
                            "calibration error {:.2f}%\n",
                            kValidWindows.min_tokens, kValidWindows.max_tokens, 100.0 * r.valid_windows->accuracy,
                            r.valid_windows->encoder_accuracy ? " (" + parts_alone(*r.valid_windows) + ")" : "",
                            100.0 * r.valid_window_ece)
              : std::string())
      << pairs_line("development contrast pairs", r.contrast_dev) << pairs_line("contrast pairs", r.contrast)
      << fmt::format("wall time {} (data {:.1f} s, training {}, test {:.1f} s); {} tokens/s in training\n",
                     tr::format_duration(r.wall_seconds), r.data_seconds, tr::format_duration(r.train_seconds),
                     r.test.seconds, tr::format_rate(r.train_tokens_per_second))
      << fmt::format("files in {}:\n", dir.string())
      << fmt::format("  {:<22} the best-validation model (epoch {})\n", tr::RunDirectory::kModel, r.best_epoch)
      << fmt::format("  {:<22} the last epoch's training state, for --resume\n", tr::RunDirectory::kCheckpoint)
      << fmt::format("  {:<22} the vocabulary, one token per line\n", kVocabFile)
      << fmt::format("  {:<22} every setting of the run\n", tr::RunDirectory::kConfig)
      << fmt::format("  {:<22} training curves, one JSON object per line\n", tr::RunDirectory::kMetrics) << std::flush;
}

}  // namespace imdb
