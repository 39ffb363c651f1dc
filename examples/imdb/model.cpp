#include "examples/imdb/model.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace imdb {

namespace fs = std::filesystem;

std::unique_ptr<Model> make_model(const Config& config, std::size_t vocab_size) {
  tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed));
  return std::make_unique<Model>(model_options(config, vocab_size), gen);
}

Config read_config(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path.string()));
  Config config;
  try {
    config = config_from_json(nlohmann::json::parse(in));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
  }
  if (const auto problem = validate(config)) {
    throw std::runtime_error(fmt::format("{}: {}", path.string(), *problem));
  }
  return config;
}

void write_config(const fs::path& path, const Config& config) {
  // Written next to the target and renamed over it, like the safetensors files.
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_json(config).dump(2) << '\n';
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot rename to {}: {}", tmp.string(), path.string(), ec.message()));
}

LoadedRun load_run(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("{}: no such run folder", dir.string()));
  LoadedRun run{read_config(dir / kConfigFile), tapegrad::datasets::Vocabulary::load(dir / kVocabFile), nullptr};
  run.model = make_model(run.config, run.vocab.size());
  auto state = run.model->state_dict();
  tapegrad::io::safetensors::load_state_dict((dir / kModelFile).string(), state);
  run.model->eval();
  return run;
}

}  // namespace imdb
