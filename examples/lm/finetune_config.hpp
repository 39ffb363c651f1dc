// The settings of `train_lm finetune`: the pretrained folder, the text, full or LoRA fine-tuning and the
// recipe, declared once as a flag table (examples/common/flags.hpp) that drives the command line,
// config.json and --resume.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"
#include "tapegrad/nn/lora.hpp"

namespace lm {

struct FinetuneConfig {
  // The pretrained model: a Hugging Face folder (config.json, safetensors, tokenizer files) or a
  // train_lm run folder.
  std::string from;
  // The text: --text FILE (each non-empty line a document), or the IMDb training reviews of one label
  // (--reviews pos|neg).
  std::string text;
  std::string valid_text;  // validation documents; empty: every 10th document of --text
  std::string reviews;     // pos | neg | empty
  std::string data;        // aclImdb folder or .tar.gz for --reviews; empty: found
  bool no_download = false;
  double valid_fraction = 0.1;       // --reviews: train_imdb's seeded split of train/
  std::int64_t valid_reviews = 500;  // documents scored at each validation (0: all)
  std::int64_t context = 0;          // tokens per document the model sees; 0: the model's context

  // Full fine-tuning (--lora-rank 0) or LoRA adapters on the layers --lora-targets names.
  std::int64_t lora_rank = 8;
  double lora_alpha = 16.0;
  double lora_dropout = 0.05;
  std::string lora_targets = "q_proj,v_proj";

  double lr = 1e-3;
  std::int64_t warmup = 10;
  double weight_decay = 0.0;
  double clip_norm = 1.0;
  std::int64_t batch_size = 4;
  std::int64_t accumulate = 1;
  std::int64_t steps = 200;
  std::int64_t eval_every = 100;
  std::int64_t seed = 0;
  std::int64_t bucket = 50;
  std::string precision = "auto";
  std::string precision_resolved;

  std::int64_t threads = 2;
  std::int64_t log_every = 10;
  std::string out = "runs/finetune";
  bool resume = false;
  bool overwrite = false;
  bool detect_anomaly = false;
  // config.json's "kind", which tells a fine-tuning run's folder from a training run's.
  std::string kind = "finetune";
};

inline constexpr int kFinetuneConfigVersion = 1;

const examples::Flags<FinetuneConfig>& finetune_flags();

// The first bad setting as one line naming the flag and the value, or nothing.
std::optional<std::string> validate(const FinetuneConfig& config);

// config.json: "version", "kind": "finetune" and every saved setting.
nlohmann::json to_json(const FinetuneConfig& config);
// Reads what to_json wrote, strictly; throws std::runtime_error naming the key at fault.
FinetuneConfig finetune_config_from_json(const nlohmann::json& json);
// Whether a run's config.json is a fine-tuning run's.
bool is_finetune_config(const nlohmann::json& json);

// The LoRA settings (--lora-rank > 0), PEFT's names: --lora-targets cut at commas.
tapegrad::nn::LoraConfig lora_config(const FinetuneConfig& config);

}  // namespace lm
