#include "examples/lm/model_folder.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "examples/lm/model.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/pretrained.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace lm {

namespace fs = std::filesystem;
namespace tt = tapegrad::train;
namespace tm = tapegrad::models;

namespace {

nlohmann::json read_config_json(const fs::path& dir) {
  if (!fs::exists(dir)) throw tt::UsageError(fmt::format("{} does not exist", dir.string()));
  if (!fs::is_directory(dir)) throw tt::UsageError(fmt::format("{} is a file, not a model folder", dir.string()));
  const fs::path path = dir / "config.json";
  if (!fs::exists(path)) {
    throw tt::UsageError(
        fmt::format("{} has no config.json: not a Hugging Face folder or a train_lm run", dir.string()));
  }
  return tapegrad::io::read_json_file(path);
}

void check_vocabularies(const ModelFolder& f) {
  if (f.tokenizer->vocab_size() > f.model->vocab_size()) {
    throw std::runtime_error(fmt::format(
        "{}: the tokenizer ({}) has ids up to {}, beyond the model's vocabulary of {} (config.json's vocab_size): "
        "they are not the same model's",
        f.dir.string(), f.tokenizer->description(), f.tokenizer->vocab_size() - 1, f.model->vocab_size()));
  }
}

template <typename M>
void set_model(ModelFolder& f, std::shared_ptr<M> model) {
  f.module = model.get();
  f.model = std::move(model);
}

ModelFolder load_train_lm_run(const fs::path& dir) {
  ModelFolder f;
  f.kind = ModelFolder::Kind::train_lm_run;
  f.dir = dir;
  const tt::RunDirectory run(dir, {kVocabFile});
  run.check_has({tt::RunDirectory::kConfig, kVocabFile, tt::RunDirectory::kModel});
  const Config config = read_config(run);
  if (config.objective != "causal") {
    throw tt::UsageError(fmt::format("{} was trained with --objective {}: only a causal run is a language model",
                                     dir.string(), config.objective));
  }
  const auto vocab = tapegrad::datasets::Vocabulary::load(run.file(kVocabFile));
  tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed));
  if (config.arch == "llama") {
    set_model(f, std::make_shared<tm::Llama<float>>(llama_options(config, vocab.size()), gen));
  } else {
    set_model(f,
              std::make_shared<tm::GPT<float>>(gpt_options(config, vocab.size(), has_output_bias(run.model())), gen));
  }
  tt::load_model(run.model(), *f.module);
  f.module->eval();
  f.tokenizer = word_tokenizer(vocab, fmt::format("vocab.txt ({} words)", vocab.size()));
  f.precision = config.precision;
  f.train_config = config;
  return f;
}

ModelFolder load_finetune_run(const fs::path& dir, const nlohmann::json& json) {
  const tt::RunDirectory run(dir);
  run.check_has({tt::RunDirectory::kConfig, tt::RunDirectory::kModel});
  FinetuneConfig config;
  try {
    config = finetune_config_from_json(json);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", run.config().string(), e.what()));
  }
  if (const auto problem = validate(config)) throw std::runtime_error(run.config().string() + ": " + *problem);
  ModelFolder f = load_model_folder(config.from);
  prepare_finetuning(f, config);
  tt::load_model(run.model(), *f.module);
  f.module->eval();
  f.kind = ModelFolder::Kind::finetune_run;
  if (f.tokenizer_dir.empty() && !f.train_config) f.tokenizer_dir = config.from;
  f.dir = dir;
  f.precision = config.precision;
  f.finetune = config;
  return f;
}

}  // namespace

ModelFolder::Kind model_folder_kind(const fs::path& dir) {
  const nlohmann::json json = read_config_json(dir);
  if (json.is_object() && json.contains("model_type")) return ModelFolder::Kind::hugging_face;
  if (is_finetune_config(json)) return ModelFolder::Kind::finetune_run;
  return ModelFolder::Kind::train_lm_run;
}

ModelFolder load_model_folder(const fs::path& dir) {
  const nlohmann::json json = read_config_json(dir);
  ModelFolder f;
  if (is_finetune_config(json)) {
    f = load_finetune_run(dir, json);
  } else if (json.is_object() && json.contains("model_type")) {
    f.kind = ModelFolder::Kind::hugging_face;
    f.dir = dir;
    f.tokenizer = load_tokenizer(dir);
    f.model = tm::from_pretrained<float>(dir.string());
    f.module = dynamic_cast<tapegrad::nn::Module<float>*>(f.model.get());
    if (!f.module) throw std::logic_error("from_pretrained returned a model that is not a Module");
    f.tokenizer_dir = dir;
  } else {
    f = load_train_lm_run(dir);
  }
  check_vocabularies(f);
  return f;
}

tapegrad::nn::LoraModuleName peft_module_names(const ModelFolder& folder) {
  return [model = folder.model](const std::string& name) { return tm::hugging_face_module_name(*model, name); };
}

void prepare_finetuning(ModelFolder& f, const FinetuneConfig& config) {
  if (config.lora_rank == 0) return;
  tapegrad::nn::LoraConfig lora = lora_config(config);
  // GPT-2's Conv1D layers hold their weights [in, out]; PEFT needs to know it to merge.
  lora.fan_in_fan_out = dynamic_cast<const tm::GPT<float>*>(f.model.get()) != nullptr;
  try {
    tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed));
    tapegrad::nn::inject_lora(*f.module, lora, gen, peft_module_names(f));
  } catch (const std::invalid_argument& e) {
    throw tt::UsageError(fmt::format("--lora-targets {} on {}: {}", config.lora_targets, config.from, e.what()));
  }
  f.lora = lora;
}

}  // namespace lm
