#include "examples/imdb/model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "examples/common/commands.hpp"
#include "examples/imdb/evaluate.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/text/negation.hpp"
#include "tapegrad/train/model_file.hpp"

namespace imdb {

namespace fs = std::filesystem;

std::unique_ptr<Model> make_model(const Config& config, const tapegrad::datasets::Vocabulary& vocab) {
  tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed));
  auto model = std::make_unique<Model>(model_options(config, vocab.size()), gen);
  if (config.wide_negation && model->wide) {
    model->wide->negation =
        tapegrad::nn::NegationScope(tapegrad::datasets::negator_ids(vocab), tapegrad::datasets::scope_end_ids(vocab));
  }
  return model;
}

tapegrad::train::RunDirectory run_directory(const fs::path& dir) {
  return tapegrad::train::RunDirectory(dir, {kVocabFile});
}

Config read_config(const tapegrad::train::RunDirectory& run) {
  return examples::read_run_settings(flags(), run, &validate);
}

tapegrad::train::LengthTemperature parse_length_temperature(const std::string& text, const fs::path& file) {
  try {
    return tapegrad::train::LengthTemperature::parse(text);
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
  const auto metadata = tapegrad::train::load_model(run_dir.model(), *run.model);
  run.model->eval();
  if (const auto it = metadata.find(kLengthTemperatureKey); it != metadata.end()) {
    run.temperature = parse_length_temperature(it->second, run_dir.model());
  }
  return run;
}

}  // namespace imdb
