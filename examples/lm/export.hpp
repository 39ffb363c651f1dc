// train_lm export: a model folder (a train_lm run, a fine-tuning run) written in Hugging Face's layout
// with its tokenizer, or a LoRA fine-tuning run's adapters alone in PEFT's.
#pragma once

#include <ostream>
#include <string>

namespace lm {

struct ExportArgs {
  std::string run;
  std::string out;
  bool adapter = false;    // the adapters alone (adapter_model.safetensors, adapter_config.json)
  bool overwrite = false;  // write into a folder that holds a model or adapters already
};

// Writes the export and says what it wrote on out. The model: config.json and model.safetensors
// (models::save_pretrained; a LoRA run's adapters merged in first), and the tokenizer: the pretrained
// folder's files copied, or a train_lm vocabulary as tokenizer.json (word_level_json.hpp) with
// tokenizer_config.json. Throws train::UsageError for bad arguments (--adapter of a run without
// adapters, an --out holding a model), std::runtime_error for file problems.
int export_command(const ExportArgs& args, std::ostream& out, std::ostream& err);

}  // namespace lm
