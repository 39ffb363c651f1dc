// The classifier a run trains, and a finished run read back from its folder (config.json, vocab.txt,
// model.safetensors) for evaluate and predict.
#pragma once

#include <filesystem>
#include <memory>

#include "examples/imdb/config.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/models/classifier.hpp"

namespace imdb {

using Model = tapegrad::models::TransformerClassifier<float>;

// The files of a run folder.
inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kCheckpointFile = "last.ckpt.safetensors";
inline constexpr const char* kVocabFile = "vocab.txt";
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kMetricsFile = "metrics.jsonl";

// A freshly initialized model, seeded with config.seed.
std::unique_ptr<Model> make_model(const Config& config, std::size_t vocab_size);

// Reads and validates config.json (throws std::runtime_error naming the file and the problem).
Config read_config(const std::filesystem::path& path);
// Writes config.json atomically.
void write_config(const std::filesystem::path& path, const Config& config);

struct LoadedRun {
  Config config;
  tapegrad::datasets::Vocabulary vocab;
  std::unique_ptr<Model> model;  // in eval mode
};
// Throws std::runtime_error naming the missing or bad file.
LoadedRun load_run(const std::filesystem::path& dir);

}  // namespace imdb
