// train_translate's settings: one struct with the defaults of the measured run (examples/translate/README.md), saved as
// the run's config.json so that `evaluate`, `translate` and --resume rebuild the same model.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "examples/common/flags.hpp"
#include "tapegrad/models/transformer.hpp"

namespace translate {

enum class Direction { WordsToDigits, DigitsToWords };
Direction parse_direction(const std::string& name);  // "words2digits" | "digits2words"
std::string direction_name(Direction d);

struct Config {
  std::string direction = "words2digits";
  // Data
  // Training numbers are drawn afresh for every batch from the training split (datasets/numbers.hpp).
  std::size_t valid_size = 1000, test_size = 2000;
  std::uint64_t seed = 1;
  // Model (torch.nn.Transformer's names)
  std::size_t d_model = 128, nhead = 4, num_encoder_layers = 2, num_decoder_layers = 2, dim_feedforward = 256;
  double dropout = 0.1;
  std::string activation = "relu";
  bool norm_first = false;
  bool tie_output = true;
  bool activation_checkpointing = false;  // each encoder and decoder block recomputed in backward
  // Optimization: the paper's recipe
  std::size_t batch_size = 64;
  std::int64_t accumulate = 1;  // micro-batches per step (gradient accumulation)
  std::int64_t zero = 0;        // ZeRO stage under mpirun (0: none)
  std::int64_t steps = 8000;
  // Seconds of training; 0 = no limit, the default: a run is its --steps on any machine (a cap tuned on one
  // machine stopped a 3x slower one halfway, below the documented quality).
  double time_limit = 0;
  std::int64_t warmup = 400;
  double lr_factor = 1.0;  // Noam factor
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-9;
  double label_smoothing = 0.1;
  double clip_norm = 0.0;
  // Run
  int threads = 2;
  std::int64_t log_every = 100, eval_every = 500;
  std::size_t beam = 1;
  std::string out = "runs/translate";
  // fp32 | bf16 (the forward and backward under tapegrad::autocast) | auto (bf16 where the CPU has native
  // bfloat16 products).
  std::string precision = "auto";
  // What precision resolved to when the run started (fp32 | bf16), which --resume keeps; train() sets
  // it, empty before.
  std::string precision_resolved;
  // How the run starts (not saved: config.json describes the run, not one invocation).
  bool resume = false;          // continue the run in out from its checkpoint
  bool overwrite = false;       // a new run may replace the run already in out
  bool detect_anomaly = false;  // tapegrad::DetectAnomalyGuard while training: names the op of a NaN

  tapegrad::models::TransformerOptions model_options() const;
};

// Every flag of train_translate and config.json's keys (the fields' names), declared once
// (examples/common/flags.hpp).
inline constexpr const char* kProgram = "train_translate";
inline constexpr int kConfigVersion = 3;
const examples::Flags<Config>& flags();

// The first bad setting as one line naming the flag and the value, or nothing.
std::optional<std::string> validate(const Config& config);
// config.json: "version" and every saved setting.
nlohmann::json to_json(const Config& config);
// Reads what to_json wrote, strictly; throws std::runtime_error naming the key (or the version) at fault.
Config config_from_json(const nlohmann::json& json);

}  // namespace translate
