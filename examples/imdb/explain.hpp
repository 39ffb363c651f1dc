// What the classifier did with one review: its tokens, P(positive), every layer's and head's attention
// weights and a gradient-times-input saliency per token. html_explain.hpp draws it as a page.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/imdb/config.hpp"
#include "examples/imdb/length_temperature.hpp"
#include "examples/imdb/wide_and_deep.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

namespace imdb {

// One distinct n-gram of the review in the model's n-gram part, and what it adds to the logit margin
// logit[positive] - logit[negative] (before the temperature): wide_weight x scale x (weight[b, 1] -
// weight[b, 0]) of its bucket b. A word in a negation's scope reads "NOT_word".
struct NgramContribution {
  std::string text;
  double margin = 0.0;
};

struct Explanation {
  std::vector<std::string> tokens;  // the tokens the model saw, in order
  std::vector<std::int64_t> ids;
  std::size_t total_tokens = 0;  // of the whole review, before truncation to max_len
  bool cls = false;              // the model prepends a [CLS] position (Pooling::Cls)
  std::vector<double> logits;
  std::int64_t predicted = 0;  // argmax of the logits
  double p_positive = 0.0;     // softmax probability of class 1 (at temperature 1)
  std::size_t layers = 0, heads = 0;
  std::size_t positions = 0;  // tokens, plus one for [CLS]
  // attention[layer][head] is a row-major [positions, positions] matrix: row q holds the weights query
  // q put on each key, as the model applied them (eval mode, so no dropout); each row sums to 1.
  std::vector<std::vector<std::vector<double>>> attention;
  // saliency[t] = sum over d of (d logit[predicted] / d e[t, d]) * e[t, d], e the embedding output.
  // Positive: the token pushes the predicted class's logit up.
  std::vector<double> saliency;
  // With an n-gram part (the default model): the margin logit[1] - logit[0] of each part, the n-gram
  // part's as weighted in the sum, and every distinct n-gram's share of it, largest |margin| first.
  // The encoder part is what the attention and saliency above explain.
  bool has_ngram_part = false;
  double encoder_margin = 0.0, ngram_margin = 0.0;
  std::vector<NgramContribution> ngrams;
};

// Runs the model on one sequence of ids (no padding) in eval mode with the tape on, then
// backpropagates the predicted class's logit. Restores the model's training mode and leaves every
// parameter's gradient as it was. Throws std::invalid_argument for an empty or too long sequence.
template <typename T>
Explanation explain_ids(WideAndDeep<T>& model, const std::vector<std::int64_t>& ids);

// explain_ids of `text` tokenized, looked up in vocab and truncated as config says (as predict does),
// with the tokens filled in and P(positive) at the run's temperature (as predict gives it).
template <typename T>
Explanation explain_text(WideAndDeep<T>& model, const tapegrad::datasets::Vocabulary& vocab, const Config& config,
                         const std::string& text, const LengthTemperature& temperature = {});

}  // namespace imdb
