#include "examples/imdb/model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "examples/common/commands.hpp"
#include "examples/imdb/evaluate.hpp"
#include "examples/imdb/features/negation.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/train/model_file.hpp"

namespace imdb {

namespace fs = std::filesystem;

std::unique_ptr<Model> make_model(const Config& config, const tapegrad::datasets::Vocabulary& vocab) {
  tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed));
  auto model = std::make_unique<Model>(model_options(config, vocab.size()), gen);
  // Fixed statistics of the training reviews, not trained (train() fills them in).
  if (model->deep->ngrams && config.ngram_init == "nb") model->deep->ngrams->weight.requires_grad_(false);
  if (config.wide_negation && model->wide) {
    model->wide->negation = features::NegationScope(features::negator_ids(vocab), features::scope_end_ids(vocab));
  }
  return model;
}

tapegrad::train::RunDirectory run_directory(const fs::path& dir) {
  return tapegrad::train::RunDirectory(dir, {kVocabFile});
}

Config read_config(const tapegrad::train::RunDirectory& run) {
  return examples::read_run_settings(flags(), run, &validate);
}

LengthTemperature parse_length_temperature(const std::string& text, const fs::path& file) {
  try {
    return LengthTemperature::parse(text);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: metadata {} is \"{}\": {}", file.string(), kLengthTemperatureKey,
                                         tapegrad::clip_for_message(text), e.what()));
  }
}

LoadedRun load_run(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("{}: no such run folder", dir.string()));
  const auto run_dir = run_directory(dir);
  run_dir.check_has({tapegrad::train::RunDirectory::kConfig, kVocabFile, tapegrad::train::RunDirectory::kModel});
  run_dir.check_files(run_dir.model());
  LoadedRun run{read_config(run_dir), tapegrad::datasets::Vocabulary::load(run_dir.file(kVocabFile)), nullptr, {}};
  run.model = make_model(run.config, run.vocab);
  tapegrad::io::safetensors::Metadata metadata;
  try {
    metadata = tapegrad::train::load_model(run_dir.model(), *run.model);
  } catch (const std::runtime_error&) {
    // The encoder classifier's tensors without the "deep." of WideAndDeep: one sentence instead of a
    // list of every tensor missing and unexpected.
    bool unprefixed = false;
    try {
      const tapegrad::io::safetensors::File file(run_dir.model().string());
      unprefixed = file.contains("embedding.weight") && !file.contains("deep.embedding.weight");
    } catch (const std::exception&) {
      // An unreadable file: load_model's message says what is wrong with it.
    }
    if (unprefixed) {
      throw std::runtime_error(fmt::format(
          "{}: the model's tensors are named without the \"deep.\" and \"wide.\" of this train_imdb's model "
          "(\"embedding.weight\", not \"deep.embedding.weight\"): it cannot load; train the run again",
          run_dir.model().string()));
    }
    throw;
  }
  run.model->eval();
  if (const auto it = metadata.find(kLengthTemperatureKey); it != metadata.end()) {
    run.temperature = parse_length_temperature(it->second, run_dir.model());
  }
  return run;
}

}  // namespace imdb
