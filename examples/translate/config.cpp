#include "examples/translate/config.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tapegrad/datasets/numbers/numbers.hpp"

namespace translate {

Direction parse_direction(const std::string& name) {
  if (name == "words2digits") return Direction::WordsToDigits;
  if (name == "digits2words") return Direction::DigitsToWords;
  throw std::invalid_argument(fmt::format("unknown direction '{}' (expected words2digits or digits2words)", name));
}

std::string direction_name(Direction d) { return d == Direction::WordsToDigits ? "words2digits" : "digits2words"; }

void Config::validate() const {
  parse_direction(direction);
  if (activation != "relu" && activation != "gelu")
    throw std::invalid_argument(fmt::format("unknown activation '{}' (expected relu or gelu)", activation));
  if (batch_size == 0 || steps <= 0 || warmup <= 0 || log_every <= 0 || eval_every <= 0)
    throw std::invalid_argument("--batch-size, --steps, --warmup, --log-every and --eval-every must be positive");
  if (beam == 0) throw std::invalid_argument("--beam must be positive");
  if (threads <= 0) throw std::invalid_argument(fmt::format("--threads must be positive, got {}", threads));
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw std::invalid_argument(fmt::format("--label-smoothing must be in [0, 1], got {}", label_smoothing));
  if (time_limit < 0) throw std::invalid_argument(fmt::format("--time-limit must be >= 0, got {}", time_limit));
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
  X(log_every) X(eval_every) X(beam) X(out)
// clang-format on

std::string Config::to_json() const {
  nlohmann::json j;
#define TRANSLATE_TO_JSON(field) j[#field] = field;
  TRANSLATE_CONFIG_FIELDS(TRANSLATE_TO_JSON)
#undef TRANSLATE_TO_JSON
  return j.dump();
}

Config Config::from_json(const std::string& text) {
  Config c;
  try {
    const auto j = nlohmann::json::parse(text);
#define TRANSLATE_FROM_JSON(field) \
  if (j.contains(#field)) j.at(#field).get_to(c.field);
    TRANSLATE_CONFIG_FIELDS(TRANSLATE_FROM_JSON)
#undef TRANSLATE_FROM_JSON
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("bad configuration: {}", e.what()));
  }
  return c;
}

}  // namespace translate
