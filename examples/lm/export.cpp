#include "examples/lm/export.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "examples/lm/model_folder.hpp"
#include "examples/lm/word_level_json.hpp"
#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/pretrained.hpp"
#include "tapegrad/nn/lora_adapter_file.hpp"
#include "tapegrad/train/errors.hpp"

namespace lm {

namespace fs = std::filesystem;
namespace tt = tapegrad::train;

namespace {

void check_out(const ExportArgs& a) {
  if (a.out.empty()) throw tt::UsageError("--out is required: the folder to write");
  if (fs::exists(a.out) && !fs::is_directory(a.out)) {
    throw tt::UsageError(fmt::format("--out {} is a file, not a folder", a.out));
  }
  if (fs::exists(a.run) && fs::exists(a.out) && fs::equivalent(a.run, a.out)) {
    throw tt::UsageError(fmt::format("--out {} is the run folder itself", a.out));
  }
  for (const char* name : {"config.json", "model.safetensors", "adapter_config.json"}) {
    if (!a.overwrite && fs::exists(fs::path(a.out) / name)) {
      throw tt::UsageError(fmt::format("--out {} holds {} already: --overwrite to replace it", a.out, name));
    }
  }
}

// GPT2LMHeadModel's lm_head has no bias, and a bias on the logits is not in the span of the head's
// weights: a GPT with one has no GPT-2 form, and dropping it would change every prediction.
void check_gpt2_form(const ModelFolder& f, const ExportArgs& a) {
  const auto* gpt = dynamic_cast<const tapegrad::models::GPT<float>*>(f.model.get());
  if (!gpt || !gpt->output_bias.defined()) return;
  throw tt::UsageError(fmt::format(
      "--run {}: its GPT has a learned bias on the logits (output_bias in its model.safetensors: a run of a "
      "train_lm whose GPT had one), which GPT-2's lm_head has not, so it cannot be written as GPT2LMHeadModel; "
      "train the run again with this train_lm (the same flags: its GPT has GPT-2's layout and exports), or use "
      "the run as it is with generate, perplexity and finetune --from",
      a.run));
}

void export_adapter(ModelFolder& f, const ExportArgs& a, std::ostream& out) {
  if (!f.lora) {
    throw tt::UsageError(
        fmt::format("--adapter: {} has no LoRA adapters (a fine-tuning run with --lora-rank > 0 has)", a.run));
  }
  tapegrad::nn::LoraFileOptions options;
  options.base_model_name_or_path = f.finetune->from;
  // PEFT names the modules of the Hugging Face model (LlamaForCausalLM, GPT2LMHeadModel).
  options.module_name = peft_module_names(f);
  tapegrad::nn::save_lora_adapter(*f.module, *f.lora, a.out, options);
  out << fmt::format("{}: adapter_model.safetensors and adapter_config.json (PEFT; base {})\n", a.out,
                     f.finetune->from);
}

}  // namespace

int export_command(const ExportArgs& a, std::ostream& out, std::ostream& err) {
  (void)err;
  if (a.run.empty()) throw tt::UsageError("--run is required: the model folder to export");
  check_out(a);
  ModelFolder f = load_model_folder(a.run);
  if (a.adapter) {
    export_adapter(f, a, out);
    return 0;
  }
  check_gpt2_form(f, a);
  if (f.lora) tapegrad::nn::merge_and_unload_lora(*f.module);
  tapegrad::models::save_pretrained(*f.model, a.out);
  std::string tokenizer;
  if (f.tokenizer_dir.empty()) {
    const auto* vocab = f.tokenizer->words();
    if (!vocab) throw std::logic_error("a train_lm model without its word vocabulary");
    tapegrad::io::write_file_atomically(fs::path(a.out) / "tokenizer.json",
                                        word_level_tokenizer_json(*vocab).dump(2) + "\n");
    tapegrad::io::write_file_atomically(fs::path(a.out) / "tokenizer_config.json",
                                        word_level_tokenizer_config(f.model->max_len()).dump(2) + "\n");
    tokenizer = "tokenizer.json (WordLevel) and tokenizer_config.json";
  } else {
    for (const fs::path& file : tokenizer_files(f.tokenizer_dir)) {
      fs::copy_file(file, fs::path(a.out) / file.filename(), fs::copy_options::overwrite_existing);
      tokenizer += (tokenizer.empty() ? "" : ", ") + file.filename().string();
    }
  }
  out << fmt::format("{}: config.json, model.safetensors{} (Hugging Face's layout), {}\n", a.out,
                     f.lora ? " (the adapters merged)" : "", tokenizer);
  return 0;
}

}  // namespace lm
