// The data of a language-model run: the IMDb training reviews only (test/ is never read), train_imdb's
// seeded validation split, the vocabulary built on the training part, the encoded reviews, and the
// count-based bigram baselines scored on exactly the targets the causal model predicts.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "examples/lm/config.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

namespace lm {

struct Data {
  tapegrad::datasets::Vocabulary vocab;  // with <mask> last for the masked objective
  tapegrad::datasets::EncodedDataset train, valid;
  // What validations during training score: --valid-reviews of valid, a fixed seeded choice (all of
  // them when it is 0 or at least their number).
  tapegrad::datasets::EncodedDataset valid_sample;
  std::filesystem::path path;  // where the reviews were read from
  std::string source;          // which rule found them
  double seconds = 0.0;        // reading, splitting, building the vocabulary and encoding
};

// Reads and encodes as config says: reviews kept to their first context (+ 1 for the causal
// objective, whose inputs drop the last token) tokens, and only those with at least 2 tokens. `saved`:
// the vocabulary of the run being resumed (or evaluated) instead of a new one. Throws
// std::runtime_error naming the places tried or the bad file.
Data prepare_data(const Config& config, const std::optional<tapegrad::datasets::Vocabulary>& saved = std::nullopt);

// The tokens kept per review: what the model's positions cover, plus the one the causal objective
// only predicts.
std::size_t kept_tokens(const Config& config);

struct BaselineScore {
  std::string name;   // "add-one bigram", "Kneser-Ney bigram"
  double loss = 0.0;  // on all validation reviews: mean negative log-likelihood per target token (nats)
  double perplexity = 0.0;
  std::size_t tokens = 0;                             // targets scored
  double sample_loss = 0.0, sample_perplexity = 0.0;  // the same on data.valid_sample
};
// Bigram models fitted on the training reviews and scored on every validation review's tokens 1..n-1
// (each predicted from the one before it): the causal model's validation targets exactly.
std::vector<BaselineScore> bigram_baselines(const Data& data);

}  // namespace lm
