// `train_lm finetune`: a pretrained causal model (model_folder.hpp) trained further, every weight or
// LoRA adapters only, on a text file's documents or the IMDb training reviews of one label, on the
// train/ layer's Trainer (metrics.jsonl, checkpoints, the best validation kept, --resume, Ctrl-C).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "examples/lm/finetune_config.hpp"
#include "examples/lm/model.hpp"
#include "examples/lm/text_tokenizer.hpp"
#include "tapegrad/datasets/text/encode.hpp"

namespace lm {

// Documents encoded with a model's tokenizer, each kept to its first `max_len` tokens, those with
// fewer than 2 tokens (nothing to predict) dropped.
struct Documents {
  tapegrad::datasets::EncodedDataset train, valid, valid_sample;
  std::string source;  // where the text came from, for the log
};

// The documents of a text file: each non-empty line. Throws std::runtime_error naming the file when it
// cannot be read or holds no document of 2 tokens.
tapegrad::datasets::EncodedDataset encode_text_file(const std::string& path, const TextTokenizer& tokenizer,
                                                    std::size_t max_len);

// The IMDb training reviews of one label (pos | neg), split as train_imdb splits train/ (valid_fraction,
// seed): the training part's and the validation part's.
struct LabelReviews {
  std::vector<std::string> train, valid;
  std::string source;
};
LabelReviews read_label_reviews(const std::string& data, bool no_download, const std::string& label,
                                double valid_fraction, std::int64_t seed);

tapegrad::datasets::EncodedDataset encode_texts(const std::vector<std::string>& texts, const TextTokenizer& tokenizer,
                                                std::size_t max_len);

// What config says to train and validate on.
Documents prepare_documents(const FinetuneConfig& config, const TextTokenizer& tokenizer, std::size_t max_len);

struct FinetuneResult {
  bool interrupted = false;
  std::int64_t steps = 0, best_step = 0;
  Validation before, best;  // the validation sample's before the first step (a new run only), and the best
  std::size_t trained_parameters = 0, parameters = 0;
  double train_seconds = 0.0;
};

// Fine-tunes as config says into config.out: config.json, metrics.jsonl, model.safetensors (the whole
// model, adapters included, of the best validation) and last.ckpt.safetensors. Throws train::UsageError
// for settings that do not fit the folders, std::runtime_error for file problems.
FinetuneResult finetune(const FinetuneConfig& config, std::ostream& out, std::ostream& log, bool interactive,
                        const std::function<bool(std::int64_t)>& stop_after_step = {});

}  // namespace lm
