// The training run of train_translate and what evaluate and translate reuse: exact match over a set of
// numbers, decoding, the cross-attention map, and a finished run read back from its folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "examples/common/parallel.hpp"
#include "examples/translate/batches.hpp"
#include "examples/translate/config.hpp"
#include "tapegrad/models/transformer.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace translate {

using Model = tapegrad::models::Transformer<float>;

// train_translate's own files of a run folder, besides train::RunDirectory's.
inline constexpr const char* kAttentionFile = "attention.svg";

tapegrad::train::RunDirectory run_directory(const std::filesystem::path& dir);

struct Score {
  std::size_t correct = 0, total = 0;
  std::vector<std::string> mistakes;  // the first few, as "source -> output (expected)"
  double fraction() const { return total ? double(correct) / double(total) : 0.0; }
  double percent() const { return 100.0 * fraction(); }
};

// Decodes every source (eval mode, no recording) with greedy search (beam 1) or beam search.
std::vector<Ids> translate_all(Model& model, const std::vector<Ids>& sources, std::size_t beam);
// The share of values whose whole translation is right.
Score exact_match(Model& model, const std::vector<std::uint64_t>& values, Direction d, std::size_t beam);
// Writes the cross-attention of every decoder layer while the model produces `output` from `source`.
void write_attention(Model& model, const Ids& source, const Ids& output, Direction d, const std::string& path);

struct LoadedRun {
  Config config;
  std::unique_ptr<Model> model;  // the best model, in eval mode
  std::int64_t step = 0;         // the step it was saved at
};
// Reads config.json and model.safetensors; throws std::runtime_error naming the missing or bad file.
LoadedRun load_run(const std::filesystem::path& dir);
// A run's config.json, read strictly and validated; throws std::runtime_error naming the file and the
// key or setting at fault (it describes a run: not the command line's fault, so not a UsageError).
Config read_config(const tapegrad::train::RunDirectory& run);

struct TrainResult {
  bool interrupted = false;  // Ctrl-C (or stop_after_step): no test evaluation
  std::int64_t steps = 0, best_step = 0;
  double best_valid = 0.0;      // exact match (fraction) of the best validation
  std::size_t validations = 0;  // run by this call
  Score test, test_beam;        // test_beam only with config.beam > 1
  double train_seconds = 0.0, wall_seconds = 0.0;
};

// Trains as config says into config.out (config.json, metrics.jsonl, last.ckpt.safetensors,
// model.safetensors, attention.svg); with config.resume continues the run there from its checkpoint.
// Progress goes to log (a redrawn bar when interactive), the results to out. The forward, backward and
// every evaluation run in config.precision as resolved on this machine (bf16: under tapegrad::autocast),
// a resumed run in the precision it started in. Stops early, like Ctrl-C,
// when interrupt_requested() or stop_after_step(step) says so after a step. Throws
// tapegrad::train::UsageError for bad settings, std::runtime_error for file problems.
// With parallel.size > 1 every rank draws the same global batch of config.batch_size numbers and trains
// its rows of it (train::shard); the loss is scaled so that the averaged gradient is the one of the whole
// batch's mean over its target tokens, as one process computes it. Rank 0 alone writes files and
// evaluates the test set.
TrainResult train(const Config& config, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t step)>& stop_after_step = {},
                  const examples::Parallel& parallel = {});

}  // namespace translate
