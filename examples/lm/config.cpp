#include "examples/lm/config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <tuple>

#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

namespace lm {

void apply_masked_defaults(Config& c, const std::function<bool(const char* flag)>& given) {
  // train_imdb's defaults (examples/imdb/config.hpp); tests/examples checks that they agree.
  const auto set = [&](const char* flag, auto& field, auto value) {
    if (!given(flag)) field = value;
  };
  set("--vocab-size", c.vocab_size, std::int64_t{50000});
  set("--layers", c.layers, std::int64_t{1});
  set("--d-model", c.d_model, std::int64_t{64});
  set("--heads", c.heads, std::int64_t{4});
  set("--ff", c.ff, std::int64_t{128});
  set("--activation", c.activation, std::string("relu"));
  set("--norm", c.norm, std::string("post"));
  set("--pos", c.pos, std::string("sinusoidal"));
  set("--lr", c.lr, 1e-3);
  // The masked objective's recipe, not the classifier's shape.
  set("--dropout", c.dropout, 0.1);
  set("--attn-dropout", c.attn_dropout, 0.1);
  set("--batch-size", c.batch_size, std::int64_t{16});
  set("--steps", c.steps, std::int64_t{300});
  set("--warmup", c.warmup, std::int64_t{30});
  set("--eval-every", c.eval_every, std::int64_t{100});
}

std::optional<std::string> validate(const Config& c) {
  const std::pair<const char*, std::int64_t> positive[] = {
      {"--vocab-size", c.vocab_size}, {"--context", c.context},       {"--layers", c.layers},
      {"--d-model", c.d_model},       {"--heads", c.heads},           {"--ff", c.ff},
      {"--hidden", c.hidden},         {"--batch-size", c.batch_size}, {"--steps", c.steps},
      {"--eval-every", c.eval_every}, {"--threads", c.threads},       {"--log-every", c.log_every}};
  for (const auto& [flag, value] : positive) {
    if (value <= 0) return fmt::format("{} {} must be positive", flag, value);
  }
  namespace lim = examples::limits;
  const std::tuple<const char*, std::int64_t, std::int64_t> at_most[] = {
      {"--vocab-size", c.vocab_size, lim::kVocabSize},
      {"--context", c.context, lim::kSequenceLength},
      {"--layers", c.layers, lim::kLayers},
      {"--d-model", c.d_model, lim::kWidth},
      {"--heads", c.heads, lim::kHeads},
      {"--ff", c.ff, lim::kWidth},
      {"--hidden", c.hidden, lim::kWidth},
      {"--batch-size", c.batch_size, lim::kBatchSize},
      {"--steps", c.steps, lim::kSteps},
      {"--eval-every", c.eval_every, lim::kSteps},
      {"--threads", c.threads, lim::kThreads},
      {"--log-every", c.log_every, lim::kSteps},
      {"--warmup", c.warmup, lim::kSteps},
      {"--bucket", c.bucket, lim::kSteps},
      {"--valid-reviews", c.valid_reviews, lim::kSteps}};
  for (const auto& [flag, value, limit] : at_most) {
    if (value > limit) return fmt::format("{} {} is above the limit of {}", flag, value, limit);
  }
  if (auto problem = examples::table_memory_problem("--vocab-size", c.vocab_size, "--context", c.context, c.d_model))
    return problem;
  if (c.lr > lim::kLearningRate) return fmt::format("--lr {} is above the limit of {}", c.lr, lim::kLearningRate);
  if (c.vocab_size < 3) {
    return fmt::format("--vocab-size {} leaves no room for a token besides <pad> and <unk>", c.vocab_size);
  }
  if (c.context < 2) return fmt::format("--context {} leaves no token to predict from another", c.context);
  if (c.d_model % c.heads != 0) return fmt::format("--d-model {} is not divisible by --heads {}", c.d_model, c.heads);
  for (const auto& [flag, value] : {std::pair{"--warmup", c.warmup},
                                    {"--seed", c.seed},
                                    {"--bucket", c.bucket},
                                    {"--valid-reviews", c.valid_reviews}}) {
    if (value < 0) return fmt::format("{} {} must not be negative", flag, value);
  }
  if (c.warmup >= c.steps) return fmt::format("--warmup {} must be less than --steps {}", c.warmup, c.steps);
  for (const auto& [flag, value] : {std::pair{"--dropout", c.dropout}, {"--attn-dropout", c.attn_dropout}}) {
    if (!(value >= 0.0 && value < 1.0)) return fmt::format("{} {} is outside [0, 1)", flag, value);
  }
  for (const auto& [flag, value] :
       {std::pair{"--lr", c.lr}, {"--weight-decay", c.weight_decay}, {"--clip-norm", c.clip_norm}}) {
    if (!(value >= 0.0) || std::isinf(value)) return fmt::format("{} {} must be a finite number >= 0", flag, value);
  }
  if (!(c.valid_fraction > 0.0 && c.valid_fraction < 1.0)) {
    return fmt::format("--valid-fraction {} is outside (0, 1)", c.valid_fraction);
  }
  struct Choice {
    const char* flag;
    const std::string& value;
    std::initializer_list<const char*> choices;
  };
  const Choice choices[] = {
      {"--objective", c.objective, {"causal", "masked"}}, {"--arch", c.arch, {"gpt", "llama"}},
      {"--activation", c.activation, {"relu", "gelu"}},   {"--norm", c.norm, {"pre", "post"}},
      {"--pos", c.pos, {"learned", "sinusoidal"}},
  };
  for (const auto& choice : choices) {
    if (auto problem = examples::choice_problem(choice.flag, choice.value, choice.choices)) return problem;
  }
  if (c.arch == "llama" && c.objective != "causal") {
    return fmt::format(
        "--arch llama --objective {}: llama is a causal model; the masked objective trains train_imdb's encoder "
        "(--arch gpt)",
        c.objective);
  }
  if (c.arch == "llama" && (c.d_model / c.heads) % 2 != 0) {
    return fmt::format("--arch llama: the head size --d-model {} / --heads {} = {} must be even (rotary embeddings)",
                       c.d_model, c.heads, c.d_model / c.heads);
  }
  if (c.objective == "causal" && c.norm != "pre") {
    return fmt::format("--norm {}: the causal model (GPT) is pre-LN only", c.norm);
  }
  return examples::precision_problem(c.precision, c.precision_resolved);
}

nlohmann::json to_json(const Config& c) {
  return {
      {"data", c.data},
      {"vocab-size", c.vocab_size},
      {"context", c.context},
      {"valid-fraction", c.valid_fraction},
      {"valid-reviews", c.valid_reviews},
      {"objective", c.objective},
      {"arch", c.arch},
      {"layers", c.layers},
      {"d-model", c.d_model},
      {"heads", c.heads},
      {"ff", c.ff},
      {"hidden", c.hidden},
      {"dropout", c.dropout},
      {"attn-dropout", c.attn_dropout},
      {"activation", c.activation},
      {"norm", c.norm},
      {"pos", c.pos},
      {"lr", c.lr},
      {"warmup", c.warmup},
      {"weight-decay", c.weight_decay},
      {"clip-norm", c.clip_norm},
      {"batch-size", c.batch_size},
      {"steps", c.steps},
      {"eval-every", c.eval_every},
      {"seed", c.seed},
      {"bucket", c.bucket},
      {"precision", c.precision},
      {"precision-resolved", c.precision_resolved},
  };
}

Config config_from_json(const nlohmann::json& json) {
  examples::check_known_keys(json, to_json(Config()));
  Config c;
  examples::read_setting(json, "data", c.data);
  examples::read_setting(json, "vocab-size", c.vocab_size);
  examples::read_setting(json, "context", c.context);
  examples::read_setting(json, "valid-fraction", c.valid_fraction);
  examples::read_setting(json, "valid-reviews", c.valid_reviews);
  examples::read_setting(json, "objective", c.objective);
  examples::read_setting(json, "arch", c.arch);
  examples::read_setting(json, "layers", c.layers);
  examples::read_setting(json, "d-model", c.d_model);
  examples::read_setting(json, "heads", c.heads);
  examples::read_setting(json, "ff", c.ff);
  examples::read_setting(json, "hidden", c.hidden);
  examples::read_setting(json, "dropout", c.dropout);
  examples::read_setting(json, "attn-dropout", c.attn_dropout);
  examples::read_setting(json, "activation", c.activation);
  examples::read_setting(json, "norm", c.norm);
  examples::read_setting(json, "pos", c.pos);
  examples::read_setting(json, "lr", c.lr);
  examples::read_setting(json, "warmup", c.warmup);
  examples::read_setting(json, "weight-decay", c.weight_decay);
  examples::read_setting(json, "clip-norm", c.clip_norm);
  examples::read_setting(json, "batch-size", c.batch_size);
  examples::read_setting(json, "steps", c.steps);
  examples::read_setting(json, "eval-every", c.eval_every);
  examples::read_setting(json, "seed", c.seed);
  examples::read_setting(json, "bucket", c.bucket);
  c.precision = "fp32";  // a run saved before the setting existed trained in fp32
  examples::read_setting(json, "precision", c.precision);
  c.precision_resolved = c.precision == "auto" ? "" : c.precision;
  examples::read_setting(json, "precision-resolved", c.precision_resolved);
  return c;
}

tapegrad::models::GPTOptions gpt_options(const Config& c, std::size_t vocab_size) {
  tapegrad::models::GPTOptions o;
  o.vocab_size = vocab_size;
  o.max_len = static_cast<std::size_t>(c.context);
  o.d_model = static_cast<std::size_t>(c.d_model);
  o.nhead = static_cast<std::size_t>(c.heads);
  o.num_layers = static_cast<std::size_t>(c.layers);
  o.dim_feedforward = static_cast<std::size_t>(c.ff);
  o.dropout = c.dropout;
  o.attention_dropout = c.attn_dropout;
  o.activation = c.activation == "relu" ? tapegrad::nn::Activation::ReLU : tapegrad::nn::Activation::GELU;
  o.positional =
      c.pos == "sinusoidal" ? tapegrad::models::PositionalKind::Sinusoidal : tapegrad::models::PositionalKind::Learned;
  o.padding_idx = tapegrad::datasets::Vocabulary::pad_id;
  return o;
}

tapegrad::models::LlamaOptions llama_options(const Config& c, std::size_t vocab_size) {
  tapegrad::models::LlamaOptions o;
  o.vocab_size = vocab_size;
  o.max_len = static_cast<std::size_t>(c.context);
  o.d_model = static_cast<std::size_t>(c.d_model);
  o.nhead = static_cast<std::size_t>(c.heads);
  o.num_layers = static_cast<std::size_t>(c.layers);
  o.hidden = static_cast<std::size_t>(c.hidden);
  o.dropout = c.dropout;
  o.tie_embeddings = true;
  o.padding_idx = tapegrad::datasets::Vocabulary::pad_id;
  return o;
}

tapegrad::models::TransformerClassifierOptions encoder_options(const Config& c, std::size_t vocab_size) {
  tapegrad::models::TransformerClassifierOptions o;
  o.vocab_size = vocab_size;
  o.max_len = static_cast<std::size_t>(c.context);
  o.d_model = static_cast<std::size_t>(c.d_model);
  o.nhead = static_cast<std::size_t>(c.heads);
  o.num_layers = static_cast<std::size_t>(c.layers);
  o.dim_feedforward = static_cast<std::size_t>(c.ff);
  o.dropout = c.dropout;
  o.attention_dropout = c.attn_dropout;
  o.activation = c.activation == "relu" ? tapegrad::nn::Activation::ReLU : tapegrad::nn::Activation::GELU;
  o.norm_first = c.norm == "pre";
  o.positional =
      c.pos == "sinusoidal" ? tapegrad::models::PositionalKind::Sinusoidal : tapegrad::models::PositionalKind::Learned;
  o.padding_idx = tapegrad::datasets::Vocabulary::pad_id;
  return o;
}

}  // namespace lm
