// A causal model with its tokenizer from any folder train_lm's subcommands take: a Hugging Face folder
// (models::from_pretrained and its tokenizer files), a train_lm run (config.json, vocab.txt,
// model.safetensors) or a `train_lm finetune` run (its --from model, its adapters, model.safetensors).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "examples/lm/config.hpp"
#include "examples/lm/finetune_config.hpp"
#include "examples/lm/text_tokenizer.hpp"
#include "tapegrad/models/causal_lm.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/module.hpp"

namespace lm {

struct ModelFolder {
  enum class Kind { hugging_face, train_lm_run, finetune_run };
  Kind kind = Kind::hugging_face;
  std::filesystem::path dir;
  std::shared_ptr<tapegrad::models::CausalLM<float>> model;
  tapegrad::nn::Module<float>* module = nullptr;  // the same model, as a Module (GPT and Llama are both)
  std::shared_ptr<const TextTokenizer> tokenizer;
  // The folder whose tokenizer files travel with an export (a fine-tuning run's base); empty for a
  // train_lm run, whose vocabulary is written as tokenizer.json.
  std::filesystem::path tokenizer_dir;
  std::string precision = "fp32";                // what the subcommands run it in unless told (a run's --precision)
  std::optional<Config> train_config;            // a train_lm run's
  std::optional<FinetuneConfig> finetune;        // a fine-tuning run's
  std::optional<tapegrad::nn::LoraConfig> lora;  // a LoRA fine-tuning run's adapters, PEFT's names (peft_module_names)
};

// What kind of folder dir is, by its config.json: model_type (Hugging Face), kind "finetune", or a
// train_lm run. Throws train::UsageError naming the folder when it has no config.json.
ModelFolder::Kind model_folder_kind(const std::filesystem::path& dir);

// The model (in eval mode) and its tokenizer. Throws train::UsageError for a folder that does not exist
// or lacks config.json, std::runtime_error naming the file and the problem otherwise: missing weights or
// tokenizer files, a masked train_lm run, a tokenizer whose ids reach past the model's vocabulary
// (naming both sizes).
ModelFolder load_model_folder(const std::filesystem::path& dir);

// The names PEFT gives folder's modules, those of the Hugging Face model
// (models::hugging_face_module_name): --lora-targets select modules under them (GPT-2's c_attn is a GPT's
// self_attn in-projection, c_fc its linear1, c_proj both out_proj and linear2), and an adapter export
// names the tensors by them.
tapegrad::nn::LoraModuleName peft_module_names(const ModelFolder& folder);

// Adds the adapters of a LoRA fine-tuning (--lora-rank > 0) to folder's model, drawn from --seed (what
// a resumed run's checkpoint then overwrites), or, for full fine-tuning, nothing. Throws
// train::UsageError naming a target that matches no module and the layers LoRA can adapt there are.
void prepare_finetuning(ModelFolder& folder, const FinetuneConfig& config);

}  // namespace lm
