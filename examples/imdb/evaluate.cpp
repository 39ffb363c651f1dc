#include "examples/imdb/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <xtensor/xview.hpp>

#include "examples/imdb/contrast_pairs.hpp"
#include "examples/imdb/logit_weights.hpp"
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

// P(class 1) from the two logits of a row times the inverse temperature, computed in double.
double positive_probability(float logit_neg, float logit_pos, double inverse_temperature) {
  return 1.0 /
         (1.0 + std::exp((static_cast<double>(logit_neg) - static_cast<double>(logit_pos)) * inverse_temperature));
}

}  // namespace

EvalResult evaluate(Model& model, const ds::EncodedDataset& data, std::size_t batch_size,
                    const std::function<bool()>& should_stop, const std::optional<ds::CropOptions>& windows) {
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
  result.logits = xt::zeros<double>({data.size(), std::size_t{2}});
  if (model.wide) result.encoder_logits = result.wide_logits = result.logits;
  double loss_sum = 0.0;
  std::size_t encoder_correct = 0, wide_correct = 0;
  tapegrad::CrossEntropyOptions ce;
  ce.reduction = tapegrad::Reduction::Sum;
  for (const auto& indices : plan) {
    if (should_stop && should_stop()) {
      result.stopped = true;
      break;
    }
    ds::Batch batch = ds::collate(data, indices);
    if (windows) {
      // Seeded by the batch's first review, so a review's window does not depend on the batch size.
      ds::random_crop(batch.ids, batch.padding_mask, *windows, ds::Vocabulary::pad_id, 0, indices.front());
    }
    const auto parts = model.forward_parts(batch.ids, batch.padding_mask);
    const auto logits = parts.total();
    loss_sum += static_cast<double>(tapegrad::cross_entropy(logits, batch.labels, ce).item());
    const auto& l = logits.data();
    const auto right = [&](const tapegrad::Tensor<float>& part, std::size_t b) {
      return (part.data()(b, 1) > part.data()(b, 0) ? 1 : 0) == batch.labels(b) ? 1 : 0;
    };
    for (std::size_t b = 0; b < indices.size(); ++b) {
      result.correct += right(logits, b);
      if (parts.wide.defined()) {
        encoder_correct += right(parts.deep, b);
        wide_correct += right(parts.wide, b);
        for (std::size_t c = 0; c < 2; ++c) {
          result.encoder_logits(result.count + b, c) = parts.deep.data()(b, c);
          result.wide_logits(result.count + b, c) = parts.wide.data()(b, c);
        }
      }
      // The tokens the model saw: the review's, or its window's.
      std::size_t seen = 0;
      for (std::size_t t = 0; t < batch.padding_mask.shape(1); ++t) seen += batch.padding_mask(b, t) ? 0 : 1;
      result.tokens += seen;
      result.logits(result.count + b, 0) = l(b, 0);
      result.logits(result.count + b, 1) = l(b, 1);
      result.labels.push_back(batch.labels(b));
      result.lengths.push_back(seen);
    }
    result.count += indices.size();
  }
  if (result.count < data.size()) {
    const auto first_rows = [&](const xt::xarray<double>& all) -> xt::xarray<double> {
      return xt::view(all, xt::range(std::size_t{0}, result.count), xt::all());
    };
    result.logits = first_rows(result.logits);
    if (model.wide) {
      result.encoder_logits = first_rows(result.encoder_logits);
      result.wide_logits = first_rows(result.wide_logits);
    }
  }
  result.loss = result.count ? loss_sum / static_cast<double>(result.count) : std::nan("");
  result.accuracy =
      result.count ? static_cast<double>(result.correct) / static_cast<double>(result.count) : std::nan("");
  if (model.wide && result.count) {
    result.encoder_accuracy = static_cast<double>(encoder_correct) / static_cast<double>(result.count);
    result.wide_accuracy = static_cast<double>(wide_correct) / static_cast<double>(result.count);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::optional<PartWeights> fit_part_weights(const EvalResult& result, bool by_length) {
  if (!result.encoder_accuracy || result.count == 0) return std::nullopt;
  PartWeights fitted;
  bool fitted_by_length = false;
  if (by_length) {
    // n ranges over the lengths fitted on, so no clamping is needed here.
    const auto s = fit_logit_weights(
        {result.encoder_logits, result.wide_logits, times_log_length(result.wide_logits, result.lengths)},
        result.labels);
    const auto [shortest, longest] = std::minmax_element(result.lengths.begin(), result.lengths.end());
    const LengthTemperature sloped{s[1], s[2], static_cast<double>(std::max<std::size_t>(*shortest, 1)),
                                   static_cast<double>(std::max<std::size_t>(*longest, 1))};
    fitted_by_length = sloped.problem().empty();
    if (fitted_by_length) {
      fitted.encoder = s[0];
      fitted.wide = sloped;
    }
  }
  if (!fitted_by_length) {  // one weight per part: asked for, or the fallback of a fit by length
    const auto w = fit_logit_weights({result.encoder_logits, result.wide_logits}, result.labels);
    fitted.encoder = w[0];
    fitted.wide.a = w[1];
  }
  std::size_t correct = 0;
  for (std::size_t i = 0; i < result.count; ++i) {
    const double margin =
        fitted.encoder * (result.encoder_logits(i, 1) - result.encoder_logits(i, 0)) +
        fitted.wide.inverse(result.lengths[i]) * (result.wide_logits(i, 1) - result.wide_logits(i, 0));
    correct += (margin > 0 ? 1 : 0) == result.labels[i] ? 1 : 0;
  }
  fitted.accuracy = static_cast<double>(correct) / static_cast<double>(result.count);
  return fitted;
}

std::string describe(const PartWeights& weights) {
  if (weights.wide.b == 0.0) return fmt::format("{:.3f} x encoder + {:.3f} x n-grams", weights.encoder, weights.wide.a);
  return fmt::format("{:.3f} x encoder + ({:.3f} {} {:.3f} ln n) x n-grams", weights.encoder, weights.wide.a,
                     weights.wide.b < 0 ? '-' : '+', std::abs(weights.wide.b));
}

std::string describe_wide_weight(const Model& model) {
  const auto& w = model.wide_weight.data();
  if (w.size() == 1) return fmt::format("{:.3f}", w(0));
  return fmt::format("({:.3f} {} {:.3f} ln n, n in [{}, {}])", w(0), w(1) < 0 ? '-' : '+', std::abs(w(1)), w(2), w(3));
}

std::vector<double> predict_proba(Model& model, const ds::Vocabulary& vocab, const Config& config,
                                  const std::vector<std::string>& texts, std::size_t batch_size,
                                  const LengthTemperature& temperature) {
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
    for (std::size_t b = 0; b < indices.size(); ++b)
      probabilities.push_back(positive_probability(l(b, 0), l(b, 1), temperature.inverse(data.length(indices[b]))));
  }
  return probabilities;
}

Calibration calibration_of(const EvalResult& result, const LengthTemperature& temperature) {
  Calibration c;
  c.temperature = temperature;
  c.calibrated = tapegrad::train::calibration_report(
      softmax_with_temperature(result.logits, temperature, result.lengths), result.labels);
  c.uncalibrated =
      tapegrad::train::calibration_report(tapegrad::train::softmax_with_temperature(result.logits, 1.0), result.labels);
  std::vector<std::size_t> short_rows;
  for (std::size_t i = 0; i < result.lengths.size(); ++i) {
    if (result.lengths[i] < kShortReviewTokens) short_rows.push_back(i);
  }
  c.short_count = short_rows.size();
  if (!short_rows.empty()) {
    const xt::xarray<double> logits = xt::view(result.logits, xt::keep(short_rows), xt::all());
    std::vector<std::int64_t> labels;
    std::vector<std::size_t> lengths;
    for (std::size_t i : short_rows) {
      labels.push_back(result.labels[i]);
      lengths.push_back(result.lengths[i]);
    }
    c.short_ece = tapegrad::train::calibration_report(softmax_with_temperature(logits, temperature, lengths), labels)
                      .expected_calibration_error;
    c.short_ece_uncalibrated =
        tapegrad::train::calibration_report(tapegrad::train::softmax_with_temperature(logits, 1.0), labels)
            .expected_calibration_error;
  }
  return c;
}

std::vector<LengthBand> length_bands(const EvalResult& result, const LengthTemperature& temperature) {
  const std::size_t edges[] = {0, 30, 60, 120, 250, 500, std::numeric_limits<std::size_t>::max()};
  std::vector<LengthBand> bands;
  for (std::size_t k = 0; k + 1 < std::size(edges); ++k) bands.push_back({edges[k], edges[k + 1]});
  const auto p = softmax_with_temperature(result.logits, temperature, result.lengths);
  for (std::size_t i = 0; i < result.count; ++i) {
    auto& band =
        *std::find_if(bands.begin(), bands.end(), [&](const LengthBand& b) { return result.lengths[i] < b.upper; });
    const std::size_t predicted = p(i, 1) > p(i, 0) ? 1 : 0;
    ++band.count;
    band.accuracy += static_cast<std::int64_t>(predicted) == result.labels[i] ? 1.0 : 0.0;
    band.confidence += std::max(p(i, 0), p(i, 1));
  }
  for (auto& band : bands) {
    if (band.count == 0) continue;
    band.accuracy /= static_cast<double>(band.count);
    band.confidence /= static_cast<double>(band.count);
  }
  return bands;
}

double mean_nll(const EvalResult& result, const LengthTemperature& temperature) {
  const auto p = softmax_with_temperature(result.logits, temperature, result.lengths);
  double total = 0.0;
  for (std::size_t i = 0; i < result.count; ++i) total -= std::log(p(i, static_cast<std::size_t>(result.labels[i])));
  return total / static_cast<double>(result.count);
}

std::string describe(const LengthTemperature& t) {
  if (t.b == 0.0) return fmt::format("T = {:.3f}", t.temperature(1));
  return fmt::format("T = 1 / ({:.4f} {} {:.4f} ln n): {:.2f} at {} tokens, {:.2f} at {}", t.a, t.b < 0 ? "-" : "+",
                     std::abs(t.b), t.temperature(static_cast<std::size_t>(t.shortest)), t.shortest,
                     t.temperature(static_cast<std::size_t>(t.longest)), t.longest);
}

ContrastResult contrast_pairs_of(Model& model, const ds::Vocabulary& vocab, const Config& config,
                                 const std::filesystem::path& pairs_file) {
  const auto pairs = read_contrast_pairs(pairs_file);
  std::vector<std::string> positives, negatives;
  for (const auto& pair : pairs) {
    positives.push_back(pair.positive);
    negatives.push_back(pair.negative);
  }
  // The threshold is 0.5 whatever the temperature, so the raw logits decide.
  const auto p_pos = predict_proba(model, vocab, config, positives);
  const auto p_neg = predict_proba(model, vocab, config, negatives);
  ContrastResult result;
  result.pairs = pairs.size();
  for (std::size_t i = 0; i < pairs.size(); ++i) result.both_right += (p_pos[i] > 0.5 && p_neg[i] < 0.5) ? 1 : 0;
  result.accuracy = contrast_pair_accuracy(p_pos, p_neg);
  return result;
}

namespace {
std::optional<std::filesystem::path> source_file(const char* relative) {
  const std::filesystem::path path = std::filesystem::path(TAPEGRAD_SOURCE_DIR) / relative;
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}
}  // namespace

std::optional<std::filesystem::path> default_contrast_pairs_file() {
  return source_file("examples/imdb/contrast_pairs.tsv");
}

std::optional<std::filesystem::path> development_contrast_pairs_file() {
  return source_file("examples/imdb/contrast_pairs_dev.tsv");
}

}  // namespace imdb
