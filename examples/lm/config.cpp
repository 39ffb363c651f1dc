#include "examples/lm/config.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "examples/common/commands.hpp"
#include "examples/common/memory_flags.hpp"
#include "examples/common/model_options.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/lm/training_flags.hpp"

namespace lm {

namespace {

namespace lim = examples::limits;
using examples::flag;

examples::Flags<Config> make_flags() {
  using C = Config;
  return {
      kProgram,
      kConfigVersion,
      examples::Keys::dashes,
      {{"Data",
        {flag("--data", &C::data, "aclImdb folder or .tar.gz (default: found as datasets/README.md describes)")
             .shown_as("found")
             .free_on_resume(),
         flag("--no-download", &C::no_download, "fail instead of downloading the data").not_saved(),
         flag("--vocab-size", &C::vocab_size,
              "vocabulary size including <pad> and <unk> (and <mask>, appended last, for the masked objective)")
             .in(examples::closed(3, lim::kVocabSize)),
         flag("--context", &C::context, "tokens per review the model sees (its positions; the head of the review)")
             .in(examples::closed(2, lim::kSequenceLength)),
         flag("--valid-fraction", &C::valid_fraction, "share of train/ held out, as train_imdb's (seeded)")
             .in(examples::between(0, 1)),
         flag("--valid-reviews", &C::valid_reviews,
              "validation reviews scored during training, a fixed seeded subset (0: all); the best model is then "
              "scored on all")
             .in(examples::closed(0, lim::kSteps))}},
       {"Model (the masked objective defaults to train_imdb's classifier)",
        {flag("--objective", &C::objective, "causal (GPT or Llama) | masked (BERT-style, for train_imdb --init-from)")
             .one_of({"causal", "masked"}),
         flag("--arch", &C::arch, "the causal model: gpt | llama (RMSNorm, rotary positions, SwiGLU)")
             .one_of({"gpt", "llama"}),
         flag("--layers", &C::layers, "Transformer layers").in(examples::closed(1, lim::kLayers)),
         flag("--d-model", &C::d_model, "embedding width").in(examples::closed(1, lim::kWidth)),
         flag("--heads", &C::heads, "attention heads (must divide --d-model)").in(examples::closed(1, lim::kHeads)),
         flag("--ff", &C::ff, "feed-forward width (not with --arch llama)").in(examples::closed(1, lim::kWidth)),
         flag("--hidden", &C::hidden, "--arch llama's SwiGLU width (the default matches GPT's parameter count)")
             .in(examples::closed(1, lim::kWidth)),
         flag("--dropout", &C::dropout, "dropout probability").in(examples::below(0, 1)),
         flag("--attn-dropout", &C::attn_dropout, "attention-weight dropout probability (not with --arch llama)")
             .in(examples::below(0, 1)),
         flag("--activation", &C::activation, "relu|gelu (not with --arch llama)").one_of({"relu", "gelu"}),
         flag("--norm", &C::norm, "pre|post LayerNorm (causal: pre only; not with --arch llama)")
             .one_of({"pre", "post"}),
         flag("--pos", &C::pos, "positions: learned|sinusoidal (not with --arch llama)")
             .one_of({"learned", "sinusoidal"}),
         examples::activation_checkpointing_flag<C>()}},
       optimization_flags<C>(
           {"reviews per step", "optimizer steps (one pass over the 22,500 training reviews is 5,625)",
            "seeds the split (as train_imdb's), initialization, order, dropout and masking"},
           {examples::zero_flag<C>()}),
       run_flag_group<C>()}};
}

}  // namespace

const examples::Flags<Config>& flags() {
  static const examples::Flags<Config> table = make_flags();
  return table;
}

const nlohmann::json& masked_defaults() {
  // train_imdb's defaults (examples/imdb/config.hpp); tests/examples checks that they agree. Then the
  // masked objective's recipe, not the classifier's shape.
  static const nlohmann::json defaults = {
      {"--vocab-size", 50000},  {"--layers", 1},      {"--d-model", 64},       {"--heads", 4},   {"--ff", 128},
      {"--activation", "relu"}, {"--norm", "post"},   {"--pos", "sinusoidal"}, {"--lr", 1e-3},   {"--dropout", 0.1},
      {"--attn-dropout", 0.1},  {"--batch-size", 16}, {"--steps", 300},        {"--warmup", 30}, {"--eval-every", 100},
  };
  return defaults;
}

std::string flags_markdown() {
  return flags().markdown_table("`--objective masked`", [](const examples::Flag& f) -> std::string {
    const auto it = masked_defaults().find(f.name);
    if (it == masked_defaults().end()) return "";
    return it->is_string() ? it->get<std::string>() : it->dump();
  });
}

void apply_masked_defaults(Config& c, const std::function<bool(const char* flag)>& given) {
  for (const auto& [name, value] : masked_defaults().items()) {
    if (!given(name.c_str())) flags().assign(c, name, value);
  }
}

std::optional<std::string> validate(const Config& c) {
  if (auto problem = flags().check(c)) return problem;
  if (auto problem = examples::table_memory_problem("--vocab-size", c.vocab_size, "--context", c.context, c.d_model))
    return problem;
  if (c.d_model % c.heads != 0) return fmt::format("--d-model {} is not divisible by --heads {}", c.d_model, c.heads);
  if (auto problem = examples::accumulate_problem(c.accumulate, c.batch_size)) return problem;
  if (c.warmup >= c.steps) return fmt::format("--warmup {} must be less than --steps {}", c.warmup, c.steps);
  if (auto problem = examples::decoupled_decay_problem(c.lr, c.weight_decay)) return problem;
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

nlohmann::json to_json(const Config& c) { return flags().to_json(c); }

Config config_from_json(const nlohmann::json& json) { return flags().from_json(json); }

tapegrad::models::GPTOptions gpt_options(const Config& c, std::size_t vocab_size, bool output_bias) {
  auto o = examples::transformer_options<tapegrad::models::GPTOptions>(c, vocab_size, c.context);
  o.output_bias = output_bias;
  o.activation_checkpointing = c.activation_checkpointing;
  return o;
}

tapegrad::models::LlamaOptions llama_options(const Config& c, std::size_t vocab_size) {
  auto o = examples::model_sizes<tapegrad::models::LlamaOptions>(c, vocab_size, c.context);
  o.hidden = static_cast<std::size_t>(c.hidden);
  o.tie_embeddings = true;
  o.activation_checkpointing = c.activation_checkpointing;
  return o;
}

tapegrad::models::TransformerClassifierOptions encoder_options(const Config& c, std::size_t vocab_size) {
  auto o = examples::transformer_options<tapegrad::models::TransformerClassifierOptions>(c, vocab_size, c.context);
  o.norm_first = c.norm == "pre";
  o.activation_checkpointing = c.activation_checkpointing;
  return o;
}

}  // namespace lm
