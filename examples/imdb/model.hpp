// The classifier a run trains, and a finished run read back from its folder (config.json, vocab.txt,
// model.safetensors) for evaluate and predict.
#pragma once

#include <filesystem>
#include <memory>

#include "examples/imdb/config.hpp"
#include "examples/imdb/length_temperature.hpp"
#include "examples/imdb/wide_and_deep.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace imdb {

using Model = WideAndDeep<float>;

// train_imdb's own file of a run folder, besides train::RunDirectory's config, metrics, checkpoint and model.
inline constexpr const char* kVocabFile = "vocab.txt";

// The run folder at dir, knowing vocab.txt as one of the run's files.
tapegrad::train::RunDirectory run_directory(const std::filesystem::path& dir);

// A freshly initialized model for vocab, seeded with config.seed (with config.wide_negation, its wide
// part marks negation scopes by vocab's negators and scope ends).
std::unique_ptr<Model> make_model(const Config& config, const tapegrad::datasets::Vocabulary& vocab);

// Reads and validates the run's config.json (throws std::runtime_error naming the file and the problem).
Config read_config(const tapegrad::train::RunDirectory& run);

struct LoadedRun {
  Config config;
  tapegrad::datasets::Vocabulary vocab;
  std::unique_ptr<Model> model;   // in eval mode
  LengthTemperature temperature;  // fitted on the validation reviews (identity: none recorded)
};
// The length-dependent temperature's "a b shortest longest" recorded in a model file's metadata
// (kLengthTemperatureKey); throws std::runtime_error naming the file for anything else.
LengthTemperature parse_length_temperature(const std::string& text, const std::filesystem::path& file);
// Throws std::runtime_error naming the missing or bad file.
LoadedRun load_run(const std::filesystem::path& dir);

}  // namespace imdb
