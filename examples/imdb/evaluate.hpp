// Scoring a model without training it: loss and accuracy over an encoded split, and P(positive) for
// raw review texts.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "examples/imdb/config.hpp"
#include "examples/imdb/length_temperature.hpp"
#include "examples/imdb/model.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/random_crop.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/train/calibration.hpp"

namespace imdb {

struct EvalResult {
  double loss = 0.0;      // mean cross-entropy per review; NaN for an empty dataset
  double accuracy = 0.0;  // NaN for an empty dataset
  std::size_t correct = 0, count = 0;
  std::size_t tokens = 0;  // real (non-padding) tokens seen
  double seconds = 0.0;
  bool stopped = false;  // should_stop said so before the end; the numbers are then partial
  // With a wide n-gram part (--wide-buckets): the accuracy of each part's logits alone, which shows
  // what each contributes to the sum, and the parts' logits [count, 2] (the wide one unweighted).
  std::optional<double> encoder_accuracy, wide_accuracy;
  xt::xarray<double> encoder_logits, wide_logits;
  // Per review, in the order evaluated: the two logits [count, 2], the label and the real tokens.
  xt::xarray<double> logits;
  std::vector<std::int64_t> labels;
  std::vector<std::size_t> lengths;
};

// With a wide part: the weights of the two parts' logits that fit the labels best
// (fit_logit_weights), encoder x encoder logits + wide.inverse(n) x wide logits for a review of
// n tokens, and the accuracy of that mixture; nothing without a wide part. The wide part's weight is
// its own inverse temperature: one number (b = 0), or with by_length a + b ln n (n clamped to the
// lengths fitted on), as WideAndDeep's wide_weight_by_length computes it; a fit by length that is not
// positive over those lengths (LengthTemperature::problem) falls back to one number.
struct PartWeights {
  double encoder = 1.0;
  LengthTemperature wide;
  double accuracy = 0.0;
};
std::optional<PartWeights> fit_part_weights(const EvalResult& result, bool by_length = false);
// "0.193 x encoder + 1.106 x n-grams", or with a slope "0.137 x encoder + (4.206 - 0.542 ln n) x n-grams".
std::string describe(const PartWeights& weights);
// The model's weight of its n-gram part: "5.728", or "(30.7 - 3.96 ln n, n in [11, 1024])".
std::string describe_wide_weight(const Model& model);

// Runs the model in eval mode without recording a tape, in batches of batch_size sorted by length (the
// scores do not depend on the order or the padding), and restores its training mode afterwards.
// should_stop, if given, is asked before each batch. With `windows`, each review is first cut to a
// random window of its tokens (datasets::random_crop with a fixed seed: the same windows every time).
EvalResult evaluate(Model& model, const tapegrad::datasets::EncodedDataset& data, std::size_t batch_size,
                    const std::function<bool()>& should_stop = {},
                    const std::optional<tapegrad::datasets::CropOptions>& windows = {});

// P(positive) of each text, encoded with vocab and truncated as config says, in eval mode, from the
// logits scaled by the run's temperature at each text's kept length.
std::vector<double> predict_proba(Model& model, const tapegrad::datasets::Vocabulary& vocab, const Config& config,
                                  const std::vector<std::string>& texts, std::size_t batch_size = 64,
                                  const LengthTemperature& temperature = {});

// Reviews shorter than this many tokens are "short" for the calibration report (issue 17: a reader
// should be able to trust P(positive) of a one-line review too).
inline constexpr std::size_t kShortReviewTokens = 30;

// How far a split's probabilities can be trusted: the expected calibration error over 15 equal-width
// bins with the run's temperature and without it, and for the short reviews alone.
struct Calibration {
  LengthTemperature temperature;
  tapegrad::train::CalibrationReport calibrated, uncalibrated;
  std::size_t short_count = 0;
  double short_ece = 0.0, short_ece_uncalibrated = 0.0;  // 0 when no review is short
};
Calibration calibration_of(const EvalResult& result, const LengthTemperature& temperature);

// Accuracy against mean confidence (the larger probability, with a temperature) of the reviews whose
// length in tokens lies in [lower, upper): where a temperature leaves a split's short or long reviews
// over- or underconfident. The bands: 0, 30, 60, 120, 250, 500 and beyond.
struct LengthBand {
  std::size_t lower = 0, upper = 0;  // upper = SIZE_MAX for the last band
  std::size_t count = 0;
  double accuracy = 0.0, confidence = 0.0;  // 0 when empty
};
std::vector<LengthBand> length_bands(const EvalResult& result, const LengthTemperature& temperature);

// The mean negative log-likelihood of the labels under softmax with a temperature.
double mean_nll(const EvalResult& result, const LengthTemperature& temperature);

// The metadata key of model.safetensors that holds the temperature fitted on the validation reviews,
// "a b shortest longest" (LengthTemperature); without it (no validation reviews), 1.
inline constexpr const char* kLengthTemperatureKey = "calibration.length_temperature";

// "T = 3.10 at 20 tokens, 6.95 at 1000" (or "T = 6.82" for a constant one), for messages.
std::string describe(const LengthTemperature& temperature);

// The contrast pairs of examples/imdb/contrast_pairs.tsv (or another file of that form): the share of
// pairs whose two members are both classified right.
struct ContrastResult {
  std::size_t pairs = 0;
  std::size_t both_right = 0;
  double accuracy = 0.0;
};
ContrastResult contrast_pairs_of(Model& model, const tapegrad::datasets::Vocabulary& vocab, const Config& config,
                                 const std::filesystem::path& pairs_file);
// The contrast-pair files this build knows, if they exist: the test pairs (the source tree's
// examples/imdb/contrast_pairs.tsv), reported and never a criterion, and the development pairs
// (contrast_pairs_dev.tsv), written apart from them, on which settings for word order are chosen.
std::optional<std::filesystem::path> default_contrast_pairs_file();
std::optional<std::filesystem::path> development_contrast_pairs_file();

}  // namespace imdb
