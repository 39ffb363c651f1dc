#include "examples/translate/config.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "examples/common/commands.hpp"
#include "examples/common/memory_flags.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"

namespace translate {

Direction parse_direction(const std::string& name) {
  if (name == "words2digits") return Direction::WordsToDigits;
  if (name == "digits2words") return Direction::DigitsToWords;
  throw std::invalid_argument(
      fmt::format("unknown direction '{}' (expected words2digits or digits2words)", tapegrad::clip_for_message(name)));
}

std::string direction_name(Direction d) { return d == Direction::WordsToDigits ? "words2digits" : "digits2words"; }

namespace {

namespace lim = examples::limits;
using examples::flag;

examples::Flags<Config> make_flags() {
  using C = Config;
  const auto uint64_max = static_cast<long double>(std::numeric_limits<std::uint64_t>::max());
  const auto count = [](long double limit) { return examples::closed(1, limit); };
  return {
      kProgram,
      kConfigVersion,
      examples::Keys::underscores,
      {{"Task",
        {flag("--direction", &C::direction, "words2digits|digits2words").one_of({"words2digits", "digits2words"})}},
       {"Data",
        {flag("--valid-size", &C::valid_size, "validation numbers").in(count(10'000'000)),
         flag("--test-size", &C::test_size, "test numbers").in(count(10'000'000)),
         flag("--seed", &C::seed, "seeds the sets, the initialization, the shuffle and dropout")
             .in(examples::closed(0, uint64_max))}},
       {"Model",
        {flag("--d-model", &C::d_model, "embedding width").in(count(lim::kWidth)),
         flag("--nhead", &C::nhead, "attention heads (must divide --d-model)").in(count(lim::kHeads)),
         flag("--num-encoder-layers", &C::num_encoder_layers, "encoder layers").in(count(lim::kLayers)),
         flag("--num-decoder-layers", &C::num_decoder_layers, "decoder layers").in(count(lim::kLayers)),
         flag("--dim-feedforward", &C::dim_feedforward, "feed-forward width").in(count(lim::kWidth)),
         flag("--dropout", &C::dropout, "dropout probability").in(examples::below(0, 1)),
         flag("--activation", &C::activation, "relu|gelu").one_of({"relu", "gelu"}),
         flag("--norm-first", &C::norm_first, "pre-LN instead of the paper's post-LN").or_off("--post-norm"),
         flag("--tie-output", &C::tie_output, "the output projection shares the target embedding")
             .or_off("--no-tie-output"),
         examples::activation_checkpointing_flag<C>()}},
       {"Optimization",
        {flag("--batch-size", &C::batch_size, "sentences per step").in(count(lim::kBatchSize)),
         examples::accumulate_flag<C>(lim::kBatchSize), examples::zero_flag<C>(),
         flag("--steps", &C::steps, "training steps").in(count(lim::kSteps)),
         flag("--time-limit", &C::time_limit,
              "stop training after this many seconds (0: none; a run is its --steps on any machine)")
             .in(examples::at_least(0)),
         flag("--warmup", &C::warmup, "Noam warmup steps").in(count(lim::kSteps)),
         flag("--lr-factor", &C::lr_factor,
              "Noam factor: lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)")
             .in(examples::closed(0, 1000)),
         examples::saved("beta1", &C::beta1).in(examples::below(0, 1)),
         flag("--beta2", &C::beta2, "Adam beta2 (beta1 is 0.9)").in(examples::below(0, 1)),
         flag("--eps", &C::eps, "Adam epsilon").in(examples::Range{0, 1, true, false}),
         flag("--label-smoothing", &C::label_smoothing, "label smoothing").in(examples::closed(0, 1)),
         flag("--clip-norm", &C::clip_norm, "gradient norm clipping (0: off)").in(examples::at_least(0))}},
       {"Run", examples::join(
                   {flag("--threads", &C::threads, "BLAS threads").in(count(lim::kThreads)).free_on_resume(),
                    flag("--precision", &C::precision, examples::kPrecisionHelp).one_of(examples::kPrecisionChoices),
                    examples::saved("precision_resolved", &C::precision_resolved),
                    flag("--log-every", &C::log_every, "steps between metrics.jsonl lines and plain progress lines")
                        .in(count(lim::kSteps)),
                    flag("--eval-every", &C::eval_every, "steps between validations (the best model is kept)")
                        .in(count(lim::kSteps)),
                    flag("--beam", &C::beam, "also evaluate the test set with this beam size").in(count(lim::kBeam)),
                    flag("--out", &C::out, "run folder (config.json, metrics.jsonl, checkpoint, model, report.html)")
                        .command_line_on_resume()},
                   examples::run_flags<C>())}}};
}

}  // namespace

const examples::Flags<Config>& flags() {
  static const examples::Flags<Config> table = make_flags();
  return table;
}

std::optional<std::string> validate(const Config& c) {
  if (auto problem = flags().check(c)) return problem;
  if (auto problem = examples::accumulate_problem(c.accumulate, static_cast<std::int64_t>(c.batch_size))) {
    return problem;
  }
  if (c.d_model % c.nhead != 0) return fmt::format("--d-model {} is not divisible by --nhead {}", c.d_model, c.nhead);
  if (c.out.empty()) return "--out must name a folder";
  if (auto problem = examples::precision_problem(c.precision, c.precision_resolved, "precision_resolved")) {
    return problem;
  }
  try {
    c.model_options().validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return std::nullopt;
}

nlohmann::json to_json(const Config& c) { return flags().to_json(c); }

Config config_from_json(const nlohmann::json& json) { return flags().from_json(json); }

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
  o.activation_checkpointing = activation_checkpointing;
  return o;
}

}  // namespace translate
