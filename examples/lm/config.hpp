// The settings of a language-model run: every flag of train_lm with its default, their checks, and
// config.json, from which generate and train_imdb --init-from rebuild the model.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "examples/common/flags.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"

namespace lm {

inline constexpr const char* kProgram = "train_lm";

struct Config {
  // Data: the text of the IMDb training reviews; the validation reviews are train_imdb's (same seed
  // and fraction); test/ is never read.
  std::string data;  // empty: found by datasets::locate_imdb
  bool no_download = false;
  std::int64_t vocab_size = 2000;  // including <pad> and <unk> (and <mask> for the masked objective)
  std::int64_t context = 1024;     // tokens per review the model sees (the positional table's size)
  double valid_fraction = 0.1;
  // Validation reviews scored during training: a fixed seeded subset, to save time; 0 = all. The final
  // validation of the best model always scores all of them.
  std::int64_t valid_reviews = 500;

  // Model.
  std::string objective = "causal";  // causal (GPT) | masked (BERT-style encoder for train_imdb --init-from)
  // The causal model: gpt (models::GPT) | llama (models::Llama: RMSNorm, RoPE, SwiGLU).
  std::string arch = "gpt";
  std::int64_t layers = 2;
  std::int64_t d_model = 128;
  std::int64_t heads = 4;
  std::int64_t ff = 512;  // GPT's (and the masked encoder's) feed-forward width
  // Llama's SwiGLU width: LLaMA's rule (8/3 d_model rounded up to a multiple of 8) at d_model 128, which
  // gives 651,904 parameters at the other defaults, within 0.2% of the GPT default's 652,800.
  std::int64_t hidden = 344;
  double dropout = 0.0;  // the default run sees each training review about once: nothing to regularize
  double attn_dropout = 0.0;
  std::string activation = "gelu";        // relu | gelu
  std::string norm = "pre";               // pre | post (post: masked objective only)
  std::string pos = "sinusoidal";         // learned | sinusoidal
  bool activation_checkpointing = false;  // each layer recomputed in backward

  // Optimization (AdamW, linear warmup then cosine decay to 0 at the last step).
  double lr = 4e-3;
  std::int64_t warmup = 100;
  double weight_decay = 0.1;
  double clip_norm = 1.0;  // 0 disables
  std::int64_t batch_size = 4;
  std::int64_t accumulate = 1;     // micro-batches per step (gradient accumulation)
  std::int64_t zero = 0;           // ZeRO stage under mpirun (0: none)
  std::int64_t steps = 5600;       // about one pass over the training reviews
  std::int64_t eval_every = 1400;  // steps between validations (and checkpoints)
  std::int64_t seed = 0;           // seeds the split (as train_imdb's --seed), init, order, dropout, masking
  std::int64_t bucket = 50;        // bucketing chunk in batches, 0 = off
  // fp32 | bf16 (the forward and backward under tapegrad::autocast) | auto (bf16 where the CPU has native
  // bfloat16 products).
  std::string precision = "auto";
  // What precision resolved to when the run started (fp32 | bf16), which --resume keeps; train() sets
  // it, empty before.
  std::string precision_resolved;

  // The run itself (not saved: they do not change the result).
  std::int64_t threads = 2;
  std::int64_t log_every = 100;
  std::string out = "runs/lm";
  bool resume = false;
  bool overwrite = false;
  bool detect_anomaly = false;  // tapegrad::DetectAnomalyGuard while training: names the op of a NaN
};

// Every flag of train_lm and config.json's keys, declared once (examples/common/flags.hpp).
inline constexpr int kConfigVersion = 3;
const examples::Flags<Config>& flags();

// The masked objective's defaults, keyed by flag: train_imdb's classifier as the model (so that
// --init-from fits it as is), and its own recipe (dropout 0.1, 300 steps of 16 reviews).
const nlohmann::json& masked_defaults();
// The flags table of examples/lm/README.md, with the masked defaults as its last column.
std::string flags_markdown();
// Sets the masked defaults of the flags not given on the command line.
void apply_masked_defaults(Config& config, const std::function<bool(const char* flag)>& given);

// The first bad setting as one line naming the flag and the value, or nothing.
std::optional<std::string> validate(const Config& config);

// config.json: "version" and every saved setting.
nlohmann::json to_json(const Config& config);
// Reads what to_json wrote, strictly; throws std::runtime_error naming the key (or the version) at fault.
Config config_from_json(const nlohmann::json& json);

// The models the settings describe over a vocabulary of vocab_size tokens.
// --arch gpt: GPT-2's layout, without a bias on the logits, so that `export` writes it as
// GPT2LMHeadModel; output_bias builds the GPT of a run whose weights hold one (load_run tells).
tapegrad::models::GPTOptions gpt_options(const Config& config, std::size_t vocab_size, bool output_bias = false);
// --arch llama: tied embeddings (as GPT's, so that the parameter counts compare), no attention-weight
// dropout (LLaMA has none); --dropout on every branch's output.
tapegrad::models::LlamaOptions llama_options(const Config& config, std::size_t vocab_size);
// For the masked objective: the options of the classifier whose encoder it trains (mean pooling, 2
// classes: train_imdb's defaults; they do not shape the encoder).
tapegrad::models::TransformerClassifierOptions encoder_options(const Config& config, std::size_t vocab_size);

}  // namespace lm
