#include "examples/imdb/config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"

namespace imdb {

std::pair<double, double> parse_betas(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) throw std::invalid_argument("expected two numbers separated by a comma");
  const std::string first = text.substr(0, comma), second = text.substr(comma + 1);
  std::size_t used1 = 0, used2 = 0;
  double b1 = 0, b2 = 0;
  try {
    b1 = std::stod(first, &used1);
    b2 = std::stod(second, &used2);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected two numbers separated by a comma");
  }
  if (used1 != first.size() || used2 != second.size()) {
    throw std::invalid_argument("expected two numbers separated by a comma");
  }
  return {b1, b2};
}

tapegrad::datasets::Truncation truncation_of(const Config& config) {
  using tapegrad::datasets::Truncation;
  if (config.truncate == "head") return Truncation::head;
  if (config.truncate == "tail") return Truncation::tail;
  if (config.truncate == "head+tail") return Truncation::head_tail;
  throw std::invalid_argument(fmt::format("--truncate {} is not one of head|tail|head+tail", config.truncate));
}

std::optional<std::string> validate(const Config& c) {
  const std::pair<const char*, std::int64_t> positive[] = {
      {"--vocab-size", c.vocab_size}, {"--max-len", c.max_len}, {"--layers", c.layers},
      {"--d-model", c.d_model},       {"--heads", c.heads},     {"--ff", c.ff},
      {"--batch-size", c.batch_size}, {"--epochs", c.epochs},   {"--threads", c.threads},
      {"--log-every", c.log_every}};
  for (const auto& [flag, value] : positive) {
    if (value <= 0) return fmt::format("{} {} must be positive", flag, value);
  }
  // Upper bounds where memory or time would explode before anything useful happens (the positional
  // table alone is max_len x d_model floats; a million layers never finishes building).
  namespace lim = examples::limits;
  const std::tuple<const char*, std::int64_t, std::int64_t> at_most[] = {
      {"--vocab-size", c.vocab_size, lim::kVocabSize},
      {"--max-len", c.max_len, lim::kSequenceLength},
      {"--layers", c.layers, lim::kLayers},
      {"--d-model", c.d_model, lim::kWidth},
      {"--heads", c.heads, lim::kHeads},
      {"--ff", c.ff, lim::kWidth},
      {"--batch-size", c.batch_size, lim::kBatchSize},
      {"--epochs", c.epochs, lim::kEpochs},
      {"--threads", c.threads, lim::kThreads},
      {"--warmup", c.warmup, lim::kSteps},
      {"--bucket", c.bucket, lim::kSteps},
      {"--log-every", c.log_every, lim::kSteps}};
  for (const auto& [flag, value, limit] : at_most) {
    if (value > limit) return fmt::format("{} {} is above the limit of {}", flag, value, limit);
  }
  // The embedding and the positional table grow with the flags.
  if (auto problem = examples::table_memory_problem("--vocab-size", c.vocab_size, "--max-len", c.max_len, c.d_model))
    return problem;
  if (c.ngram_buckets < 0 || c.ngram_buckets == 1 || c.ngram_buckets > lim::kNgramBuckets) {
    return fmt::format("--ngram-buckets {} must be 0 (none) or between 2 and {}", c.ngram_buckets, lim::kNgramBuckets);
  }
  if (c.ngram_max < 2 || c.ngram_max > lim::kNgramMax) {
    return fmt::format("--ngram-max {} is outside [2, {}]", c.ngram_max, lim::kNgramMax);
  }
  if (c.ngram_dim < 0 || c.ngram_dim > c.d_model) {
    return fmt::format("--ngram-dim {} is outside [0, --d-model {}]", c.ngram_dim, c.d_model);
  }
  // The n-gram table, its gradient and Adam's moments: 16 bytes per float, like the embedding's.
  const double ngram_bytes = 16.0 * double(c.ngram_buckets) * double(c.ngram_dim == 0 ? c.d_model : c.ngram_dim);
  if (ngram_bytes > examples::physical_memory_bytes() / 2) {
    return fmt::format(
        "--ngram-buckets {} at --d-model {} needs {:.1f} GB for its table, more than half of this "
        "machine's {:.1f} GB",
        c.ngram_buckets, c.d_model, ngram_bytes / 1e9, examples::physical_memory_bytes() / 1e9);
  }
  if (c.wide_buckets < 0 || c.wide_buckets == 1 || c.wide_buckets > lim::kNgramBuckets) {
    return fmt::format("--wide-buckets {} must be 0 (none) or between 2 and {}", c.wide_buckets, lim::kNgramBuckets);
  }
  // The wide table (a column per class), its gradient and Adam's moments, and the feature scale.
  const double wide_bytes = (16.0 * 2 + (c.wide_nb ? 4.0 : 0.0)) * double(c.wide_buckets);
  if (wide_bytes > examples::physical_memory_bytes() / 2) {
    return fmt::format("--wide-buckets {} needs {:.1f} GB for its table, more than half of this machine's {:.1f} GB",
                       c.wide_buckets, wide_bytes / 1e9, examples::physical_memory_bytes() / 1e9);
  }
  if (!(c.wide_negation_factor >= -10.0 && c.wide_negation_factor <= 10.0)) {
    return fmt::format("--wide-negation-factor {} is outside [-10, 10]", c.wide_negation_factor);
  }
  if (c.wide_max_n < 1 || c.wide_max_n > lim::kNgramMax) {
    return fmt::format("--wide-max-n {} is outside [1, {}]", c.wide_max_n, lim::kNgramMax);
  }
  if (c.vocab_size < 3)
    return fmt::format("--vocab-size {} leaves no room for a token besides <pad> and <unk>", c.vocab_size);
  if (c.d_model % c.heads != 0) return fmt::format("--d-model {} is not divisible by --heads {}", c.d_model, c.heads);
  for (const auto& [flag, value] : {std::pair{"--warmup", c.warmup}, {"--seed", c.seed}, {"--bucket", c.bucket}}) {
    if (value < 0) return fmt::format("{} {} must not be negative", flag, value);
  }
  for (const auto& [flag, value] :
       {std::pair{"--dropout", c.dropout}, {"--attn-dropout", c.attn_dropout}, {"--word-dropout", c.word_dropout}}) {
    if (!(value >= 0.0 && value < 1.0)) return fmt::format("{} {} is outside [0, 1)", flag, value);
  }
  for (const auto& [flag, value] :
       {std::pair{"--lr", c.lr}, {"--eps", c.eps}, {"--weight-decay", c.weight_decay}, {"--clip-norm", c.clip_norm}}) {
    if (!(value >= 0.0) || std::isinf(value)) return fmt::format("{} {} must be a finite number >= 0", flag, value);
  }
  if (c.lr > examples::limits::kLearningRate)
    return fmt::format("--lr {} is above the limit of {}", c.lr, examples::limits::kLearningRate);
  if (!(c.momentum >= 0.0 && c.momentum < 1.0)) return fmt::format("--momentum {} is outside [0, 1)", c.momentum);
  if (!(c.ema >= 0.0 && c.ema < 1.0)) return fmt::format("--ema {} is outside [0, 1)", c.ema);
  if (!(c.valid_fraction >= 0.0 && c.valid_fraction < 1.0)) {
    return fmt::format("--valid-fraction {} is outside [0, 1)", c.valid_fraction);
  }
  if (!(c.crop >= 0.0 && c.crop <= 1.0)) return fmt::format("--crop {} is outside [0, 1]", c.crop);
  for (const auto& [flag, value] : {std::pair{"--crop-min", c.crop_min}, {"--crop-max", c.crop_max}}) {
    if (value < 1 || value > lim::kSequenceLength) {
      return fmt::format("{} {} is outside [1, {}]", flag, value, lim::kSequenceLength);
    }
  }
  if (!(c.clause_negation >= 0.0 && c.clause_negation <= 1.0)) {
    return fmt::format("--clause-negation {} is outside [0, 1]", c.clause_negation);
  }
  if (!(c.polarity_margin > 0.0 && std::isfinite(c.polarity_margin))) {
    return fmt::format("--polarity-margin {} must be a positive number", c.polarity_margin);
  }
  if (c.crop_min > c.crop_max) {
    return fmt::format("--crop-min {} is above --crop-max {}", c.crop_min, c.crop_max);
  }

  struct Choice {
    const char* flag;
    const std::string& value;
    std::initializer_list<const char*> choices;
  };
  const Choice choices[] = {
      {"--truncate", c.truncate, {"head", "tail", "head+tail"}},
      {"--activation", c.activation, {"relu", "gelu"}},
      {"--norm", c.norm, {"post", "pre"}},
      {"--pooling", c.pooling, {"max", "mean", "cls"}},
      {"--pos", c.pos, {"sinusoidal", "learned"}},
      {"--wide-loss", c.wide_loss, {"joint", "separate"}},
      {"--optimizer", c.optimizer, {"adam", "adamw", "sgd"}},
      {"--schedule", c.schedule, {"constant", "linear", "cosine", "inv-sqrt", "noam"}},
  };
  for (const auto& choice : choices) {
    if (auto problem = examples::choice_problem(choice.flag, choice.value, choice.choices)) return problem;
  }
  if ((c.schedule == "inv-sqrt" || c.schedule == "noam") && c.warmup == 0) {
    return fmt::format("--schedule {} needs --warmup >= 1, got {}", c.schedule, c.warmup);
  }
  try {
    const auto [b1, b2] = parse_betas(c.betas);
    for (double b : {b1, b2}) {
      if (!(b >= 0.0 && b < 1.0)) return fmt::format("--betas {} has {} outside [0, 1)", c.betas, b);
    }
  } catch (const std::invalid_argument& e) {
    return fmt::format("--betas {}: {}", c.betas, e.what());
  }
  return examples::precision_problem(c.precision, c.precision_resolved);
}

nlohmann::json to_json(const Config& c) {
  return {
      {"data", c.data},
      {"vocab-size", c.vocab_size},
      {"max-len", c.max_len},
      {"truncate", c.truncate},
      {"valid-fraction", c.valid_fraction},
      {"layers", c.layers},
      {"d-model", c.d_model},
      {"heads", c.heads},
      {"ff", c.ff},
      {"dropout", c.dropout},
      {"attn-dropout", c.attn_dropout},
      {"word-dropout", c.word_dropout},
      {"crop", c.crop},
      {"crop-min", c.crop_min},
      {"crop-max", c.crop_max},
      {"clause-negation", c.clause_negation},
      {"polarity-margin", c.polarity_margin},
      {"activation", c.activation},
      {"norm", c.norm},
      {"pooling", c.pooling},
      {"pos", c.pos},
      {"ngram-buckets", c.ngram_buckets},
      {"ngram-max", c.ngram_max},
      {"ngram-dim", c.ngram_dim},
      {"wide-buckets", c.wide_buckets},
      {"wide-max-n", c.wide_max_n},
      {"wide-loss", c.wide_loss},
      {"wide-nb", c.wide_nb},
      {"wide-negation", c.wide_negation},
      {"wide-negation-factor", c.wide_negation_factor},
      {"wide-weight-by-length", c.wide_weight_by_length},
      {"optimizer", c.optimizer},
      {"lr", c.lr},
      {"warmup", c.warmup},
      {"schedule", c.schedule},
      {"betas", c.betas},
      {"eps", c.eps},
      {"weight-decay", c.weight_decay},
      {"momentum", c.momentum},
      {"clip-norm", c.clip_norm},
      {"ema", c.ema},
      {"batch-size", c.batch_size},
      {"epochs", c.epochs},
      {"seed", c.seed},
      {"bucket", c.bucket},
      {"init-from", c.init_from},
      {"precision", c.precision},
      {"precision-resolved", c.precision_resolved},
  };
}

Config config_from_json(const nlohmann::json& json) {
  examples::check_known_keys(json, to_json(Config()));
  Config c;
  examples::read_setting(json, "data", c.data);
  examples::read_setting(json, "vocab-size", c.vocab_size);
  examples::read_setting(json, "max-len", c.max_len);
  examples::read_setting(json, "truncate", c.truncate);
  examples::read_setting(json, "valid-fraction", c.valid_fraction);
  examples::read_setting(json, "layers", c.layers);
  examples::read_setting(json, "d-model", c.d_model);
  examples::read_setting(json, "heads", c.heads);
  examples::read_setting(json, "ff", c.ff);
  examples::read_setting(json, "dropout", c.dropout);
  examples::read_setting(json, "attn-dropout", c.attn_dropout);
  examples::read_setting(json, "word-dropout", c.word_dropout);
  examples::read_setting(json, "crop", c.crop);
  examples::read_setting(json, "crop-min", c.crop_min);
  examples::read_setting(json, "crop-max", c.crop_max);
  c.clause_negation = 0.0;  // a run saved before the setting existed rewrote no clauses
  examples::read_setting(json, "clause-negation", c.clause_negation);
  examples::read_setting(json, "polarity-margin", c.polarity_margin);
  examples::read_setting(json, "activation", c.activation);
  examples::read_setting(json, "norm", c.norm);
  examples::read_setting(json, "pooling", c.pooling);
  examples::read_setting(json, "pos", c.pos);
  examples::read_setting(json, "ngram-buckets", c.ngram_buckets);
  examples::read_setting(json, "ngram-max", c.ngram_max);
  examples::read_setting(json, "ngram-dim", c.ngram_dim);
  examples::read_setting(json, "wide-buckets", c.wide_buckets);
  examples::read_setting(json, "wide-max-n", c.wide_max_n);
  examples::read_setting(json, "wide-loss", c.wide_loss);
  examples::read_setting(json, "wide-nb", c.wide_nb);
  c.wide_negation = false;  // a run saved before the setting existed marked no negation
  examples::read_setting(json, "wide-negation", c.wide_negation);
  c.wide_negation_factor = 0.0;  // likewise
  examples::read_setting(json, "wide-negation-factor", c.wide_negation_factor);
  c.wide_weight_by_length = false;  // likewise
  examples::read_setting(json, "wide-weight-by-length", c.wide_weight_by_length);
  examples::read_setting(json, "optimizer", c.optimizer);
  examples::read_setting(json, "lr", c.lr);
  examples::read_setting(json, "warmup", c.warmup);
  examples::read_setting(json, "schedule", c.schedule);
  examples::read_setting(json, "betas", c.betas);
  examples::read_setting(json, "eps", c.eps);
  examples::read_setting(json, "weight-decay", c.weight_decay);
  examples::read_setting(json, "momentum", c.momentum);
  examples::read_setting(json, "clip-norm", c.clip_norm);
  examples::read_setting(json, "ema", c.ema);
  examples::read_setting(json, "batch-size", c.batch_size);
  examples::read_setting(json, "epochs", c.epochs);
  examples::read_setting(json, "seed", c.seed);
  examples::read_setting(json, "bucket", c.bucket);
  examples::read_setting(json, "init-from", c.init_from);
  c.precision = "fp32";  // a run saved before the setting existed trained in fp32
  examples::read_setting(json, "precision", c.precision);
  c.precision_resolved = c.precision == "auto" ? "" : c.precision;
  examples::read_setting(json, "precision-resolved", c.precision_resolved);
  return c;
}

WideAndDeepOptions model_options(const Config& c, std::size_t vocab_size) {
  namespace models = tapegrad::models;
  WideAndDeepOptions wide_and_deep;
  models::TransformerClassifierOptions& o = wide_and_deep.deep;
  o.vocab_size = vocab_size;
  o.max_len = static_cast<std::size_t>(c.max_len);
  o.d_model = static_cast<std::size_t>(c.d_model);
  o.nhead = static_cast<std::size_t>(c.heads);
  o.num_layers = static_cast<std::size_t>(c.layers);
  o.dim_feedforward = static_cast<std::size_t>(c.ff);
  o.dropout = c.dropout;
  o.attention_dropout = c.attn_dropout;
  o.activation = c.activation == "gelu" ? tapegrad::nn::Activation::GELU : tapegrad::nn::Activation::ReLU;
  o.norm_first = c.norm == "pre";
  // validate() has checked both names.
  o.pooling = c.pooling == "max"   ? models::Pooling::Max
              : c.pooling == "cls" ? models::Pooling::Cls
                                   : models::Pooling::Mean;
  o.positional = c.pos == "learned" ? models::PositionalKind::Learned : models::PositionalKind::Sinusoidal;
  o.ngram_buckets = static_cast<std::size_t>(c.ngram_buckets);
  o.ngram_max = static_cast<std::size_t>(c.ngram_max);
  o.ngram_dim = static_cast<std::size_t>(c.ngram_dim);
  o.num_classes = 2;
  o.padding_idx = tapegrad::datasets::Vocabulary::pad_id;
  WideAndDeepOptions& w = wide_and_deep;
  w.wide_buckets = static_cast<std::size_t>(c.wide_buckets);
  w.wide_max_n = static_cast<std::size_t>(c.wide_max_n);
  w.wide_feature_scale = c.wide_nb && c.wide_buckets > 0;  // without a wide part there is nothing to scale
  if (c.wide_negation_factor != 0.0 && c.wide_negation && c.wide_buckets > 0)  // else it would act on nothing
    w.wide_negation_factor = c.wide_negation_factor;
  w.wide_weight_by_length = c.wide_weight_by_length && c.wide_buckets > 0;
  return wide_and_deep;
}

}  // namespace imdb
