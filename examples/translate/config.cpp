#include "examples/translate/config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/io/json.hpp"

namespace translate {

Direction parse_direction(const std::string& name) {
  if (name == "words2digits") return Direction::WordsToDigits;
  if (name == "digits2words") return Direction::DigitsToWords;
  throw std::invalid_argument(
      fmt::format("unknown direction '{}' (expected words2digits or digits2words)", tapegrad::clip_for_message(name)));
}

std::string direction_name(Direction d) { return d == Direction::WordsToDigits ? "words2digits" : "digits2words"; }

void Config::validate() const {
  parse_direction(direction);
  if (activation != "relu" && activation != "gelu")
    throw std::invalid_argument(
        fmt::format("unknown activation '{}' (expected relu or gelu)", tapegrad::clip_for_message(activation)));
  // Positive, and below bounds far above any useful run, where memory or time would explode before
  // anything happens (a 10^9-wide model is a bad_alloc, 10^9 layers never finish building).
  namespace lim = examples::limits;
  const std::tuple<const char*, std::uint64_t, std::int64_t> counts[] = {
      {"--valid-size", valid_size, 10'000'000},  // make_numbers_dataset's limit
      {"--test-size", test_size, 10'000'000},    // the test set is evaluated, and an example drawn from it
      {"--d-model", d_model, lim::kWidth},
      {"--nhead", nhead, lim::kHeads},
      {"--num-encoder-layers", num_encoder_layers, lim::kLayers},
      {"--num-decoder-layers", num_decoder_layers, lim::kLayers},
      {"--dim-feedforward", dim_feedforward, lim::kWidth},
      {"--batch-size", batch_size, lim::kBatchSize},
      {"--beam", beam, lim::kBeam}};
  for (const auto& [flag, value, limit] : counts) {
    if (value == 0) throw std::invalid_argument(fmt::format("{} 0 must be positive", flag));
    if (value > std::uint64_t(limit))
      throw std::invalid_argument(fmt::format("{} {} is above the limit of {}", flag, value, limit));
  }
  const std::tuple<const char*, std::int64_t, std::int64_t> steps_like[] = {{"--steps", steps, lim::kSteps},
                                                                            {"--warmup", warmup, lim::kSteps},
                                                                            {"--log-every", log_every, lim::kSteps},
                                                                            {"--eval-every", eval_every, lim::kSteps},
                                                                            {"--threads", threads, lim::kThreads}};
  for (const auto& [flag, value, limit] : steps_like) {
    if (value <= 0) throw std::invalid_argument(fmt::format("{} {} must be positive", flag, value));
    if (value > limit) throw std::invalid_argument(fmt::format("{} {} is above the limit of {}", flag, value, limit));
  }
  if (d_model % nhead != 0)
    throw std::invalid_argument(fmt::format("--d-model {} is not divisible by --nhead {}", d_model, nhead));
  const auto in_range = [](const char* flag, double v, double lo, double hi, const char* range) {
    if (!(v >= lo && v <= hi)) throw std::invalid_argument(fmt::format("{} {} is outside {}", flag, v, range));
  };
  in_range("--dropout", dropout, 0.0, std::nextafter(1.0, 0.0), "[0, 1)");
  in_range("--label-smoothing", label_smoothing, 0.0, 1.0, "[0, 1]");
  in_range("--beta1", beta1, 0.0, std::nextafter(1.0, 0.0), "[0, 1)");
  in_range("--beta2", beta2, 0.0, std::nextafter(1.0, 0.0), "[0, 1)");
  in_range("--lr-factor", lr_factor, 0.0, 1000.0, "[0, 1000]");
  in_range("--eps", eps, 0.0, 1.0, "[0, 1]");
  const double inf = std::numeric_limits<double>::infinity();
  in_range("--clip-norm", clip_norm, 0.0, std::nextafter(inf, 0.0), "[0, inf) (0 = off)");
  in_range("--time-limit", time_limit, 0.0, std::nextafter(inf, 0.0), "[0, inf) seconds (0 = none)");
  if (out.empty()) throw std::invalid_argument("--out must name a folder");
  if (const auto problem = examples::precision_problem(precision, precision_resolved, "precision_resolved")) {
    throw std::invalid_argument(*problem);
  }
  model_options().validate();
}

tapegrad::models::TransformerOptions Config::model_options() const {
  tapegrad::models::TransformerOptions o;
  o.src_vocab_size = o.tgt_vocab_size = tapegrad::datasets::number_tokens().size();
  o.d_model = d_model;
  o.nhead = nhead;
  o.num_encoder_layers = num_encoder_layers;
  o.num_decoder_layers = num_decoder_layers;
  o.dim_feedforward = dim_feedforward;
  o.dropout = dropout;
  o.activation = activation == "gelu" ? tapegrad::nn::Activation::GELU : tapegrad::nn::Activation::ReLU;
  o.norm_first = norm_first;
  o.max_len = 32;  // 20 word tokens + bos at most
  o.padding_idx = tapegrad::datasets::kNumberPad;
  o.tie_output = tie_output;
  return o;
}

// clang-format does not reformat this macro the same way twice.
// clang-format off
#define TRANSLATE_CONFIG_FIELDS(X) \
  X(direction) X(valid_size) X(test_size) X(seed) X(d_model) X(nhead) \
  X(num_encoder_layers) X(num_decoder_layers) X(dim_feedforward) X(dropout) X(activation) X(norm_first) \
  X(tie_output) X(batch_size) X(steps) X(time_limit) X(warmup) X(lr_factor) \
  X(beta1) X(beta2) X(eps) X(label_smoothing) X(clip_norm) X(threads) \
  X(log_every) X(eval_every) X(beam) X(out) X(precision) X(precision_resolved)
// clang-format on

std::string Config::to_json() const {
  nlohmann::json j;
#define TRANSLATE_TO_JSON(field) j[#field] = field;
  TRANSLATE_CONFIG_FIELDS(TRANSLATE_TO_JSON)
#undef TRANSLATE_TO_JSON
  return j.dump();
}

Config Config::from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = tapegrad::io::parse_json(text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("bad configuration: {}", e.what()));
  }
  Config c;
  c.precision = "fp32";  // a run saved before the setting existed trained in fp32
  try {
    examples::check_known_keys(j, nlohmann::json::parse(Config().to_json()));
#define TRANSLATE_FROM_JSON(field) examples::read_setting(j, #field, c.field);
    TRANSLATE_CONFIG_FIELDS(TRANSLATE_FROM_JSON)
#undef TRANSLATE_FROM_JSON
    if (!j.contains("precision_resolved")) c.precision_resolved = c.precision == "auto" ? "" : c.precision;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("bad configuration: {}", e.what()));
  }
  return c;
}

}  // namespace translate
