// Scoring a model without training it: loss and accuracy over an encoded split, and P(positive) for
// raw review texts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "examples/imdb/config.hpp"
#include "examples/imdb/model.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

namespace imdb {

struct EvalResult {
  double loss = 0.0;      // mean cross-entropy per review; NaN for an empty dataset
  double accuracy = 0.0;  // NaN for an empty dataset
  std::size_t correct = 0, count = 0;
  std::size_t tokens = 0;  // real (non-padding) tokens seen
  double seconds = 0.0;
  bool stopped = false;  // should_stop said so before the end; the numbers are then partial
};

// Runs the model in eval mode without recording a tape, in batches of batch_size sorted by length (the
// scores do not depend on the order or the padding), and restores its training mode afterwards.
// should_stop, if given, is asked before each batch.
EvalResult evaluate(Model& model, const tapegrad::datasets::EncodedDataset& data, std::size_t batch_size,
                    const std::function<bool()>& should_stop = {});

// P(positive) of each text, encoded with vocab and truncated as config says, in eval mode.
std::vector<double> predict_proba(Model& model, const tapegrad::datasets::Vocabulary& vocab, const Config& config,
                                  const std::vector<std::string>& texts, std::size_t batch_size = 64);

}  // namespace imdb
