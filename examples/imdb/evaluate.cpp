#include "examples/imdb/evaluate.hpp"

#include <chrono>
#include <cmath>

#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/text/batching.hpp"

namespace imdb {

namespace ds = tapegrad::datasets;

namespace {

// Puts the model in eval mode for a scope and gives it back its previous mode.
class EvalMode {
 public:
  explicit EvalMode(Model& model) : model_(model), was_training_(model.is_training()) { model_.eval(); }
  ~EvalMode() { model_.train(was_training_); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  Model& model_;
  bool was_training_;
};

// P(class 1) from the two logits of a row, computed stably in double.
double positive_probability(float logit_neg, float logit_pos) {
  return 1.0 / (1.0 + std::exp(static_cast<double>(logit_neg) - static_cast<double>(logit_pos)));
}

}  // namespace

EvalResult evaluate(Model& model, const ds::EncodedDataset& data, std::size_t batch_size,
                    const std::function<bool()>& should_stop) {
  const auto start = std::chrono::steady_clock::now();
  EvalMode mode(model);
  tapegrad::NoGradGuard no_grad;
  ds::BatchOptions options;
  options.batch_size = batch_size;
  options.shuffle = false;
  // One chunk holding everything: batches of similar lengths, so little padding.
  options.bucket_chunk = std::max<std::size_t>(1, (data.size() + batch_size - 1) / batch_size);
  const auto plan = ds::epoch_batches(data, options, 0);

  EvalResult result;
  double loss_sum = 0.0;
  tapegrad::CrossEntropyOptions ce;
  ce.reduction = tapegrad::Reduction::Sum;
  for (const auto& indices : plan) {
    if (should_stop && should_stop()) {
      result.stopped = true;
      break;
    }
    const ds::Batch batch = ds::collate(data, indices);
    const auto logits = model.forward(batch.ids, batch.padding_mask);
    loss_sum += static_cast<double>(tapegrad::cross_entropy(logits, batch.labels, ce).item());
    const auto& l = logits.data();
    for (std::size_t b = 0; b < indices.size(); ++b) {
      const std::int64_t predicted = l(b, 1) > l(b, 0) ? 1 : 0;
      result.correct += predicted == batch.labels(b) ? 1 : 0;
      result.tokens += data.length(indices[b]);
    }
    result.count += indices.size();
  }
  result.loss = result.count ? loss_sum / static_cast<double>(result.count) : std::nan("");
  result.accuracy =
      result.count ? static_cast<double>(result.correct) / static_cast<double>(result.count) : std::nan("");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<double> predict_proba(Model& model, const ds::Vocabulary& vocab, const Config& config,
                                  const std::vector<std::string>& texts, std::size_t batch_size) {
  std::vector<std::size_t> all(texts.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const auto data = ds::EncodedDataset::encode_texts(
      texts.size(), [&](std::size_t i) -> std::string_view { return texts[i]; }, [](std::size_t) { return 0; }, all,
      vocab, static_cast<std::size_t>(config.max_len), truncation_of(config));

  EvalMode mode(model);
  tapegrad::NoGradGuard no_grad;
  std::vector<double> probabilities;
  probabilities.reserve(texts.size());
  for (std::size_t begin = 0; begin < data.size(); begin += batch_size) {
    std::vector<std::size_t> indices;
    for (std::size_t i = begin; i < std::min(data.size(), begin + batch_size); ++i) indices.push_back(i);
    const ds::Batch batch = ds::collate(data, indices);
    const auto logits = model.forward(batch.ids, batch.padding_mask);
    const auto& l = logits.data();
    for (std::size_t b = 0; b < indices.size(); ++b) probabilities.push_back(positive_probability(l(b, 0), l(b, 1)));
  }
  return probabilities;
}

}  // namespace imdb
