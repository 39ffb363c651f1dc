#include "examples/imdb/config.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "examples/common/commands.hpp"
#include "examples/common/memory_flags.hpp"
#include "examples/common/model_options.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "tapegrad/optim/schedule.hpp"

namespace imdb {

std::pair<double, double> parse_betas(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) throw std::invalid_argument("expected two numbers separated by a comma");
  const std::string first = text.substr(0, comma), second = text.substr(comma + 1);
  std::size_t used1 = 0, used2 = 0;
  double b1 = 0, b2 = 0;
  try {
    b1 = std::stod(first, &used1);
    b2 = std::stod(second, &used2);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected two numbers separated by a comma");
  }
  if (used1 != first.size() || used2 != second.size()) {
    throw std::invalid_argument("expected two numbers separated by a comma");
  }
  return {b1, b2};
}

tapegrad::datasets::Truncation truncation_of(const Config& config) {
  using tapegrad::datasets::Truncation;
  if (config.truncate == "head") return Truncation::head;
  if (config.truncate == "tail") return Truncation::tail;
  if (config.truncate == "head+tail") return Truncation::head_tail;
  throw std::invalid_argument(fmt::format("--truncate {} is not one of head|tail|head+tail", config.truncate));
}

namespace {

namespace lim = examples::limits;
using examples::closed;
using examples::flag;

std::vector<examples::Flag> data_flags() {
  using C = Config;
  return {
      flag("--data", &C::data, "aclImdb folder or .tar.gz (default: found as datasets/README.md describes)")
          .shown_as("found")
          .free_on_resume(),
      flag("--no-download", &C::no_download, "fail instead of downloading the data").not_saved(),
      flag("--vocab-size", &C::vocab_size, "vocabulary size including <pad> and <unk>").in(closed(3, lim::kVocabSize)),
      flag("--max-len", &C::max_len, "tokens kept per review").in(closed(1, lim::kSequenceLength)),
      flag("--valid-fraction", &C::valid_fraction,
           "share of train/ held out for validation (seeded, stratified; 0: none, the last epoch is kept)")
          .in(examples::below(0, 1)),
      flag("--truncate", &C::truncate, "which tokens a longer review keeps: head|tail|head+tail")
          .one_of({"head", "tail", "head+tail"}),
  };
}

std::vector<examples::Flag> model_flags() {
  using C = Config;
  return {
      flag("--layers", &C::layers, "encoder layers").in(closed(1, lim::kLayers)),
      flag("--d-model", &C::d_model, "embedding width").in(closed(1, lim::kWidth)),
      flag("--heads", &C::heads, "attention heads (must divide --d-model)").in(closed(1, lim::kHeads)),
      flag("--ff", &C::ff, "feed-forward width").in(closed(1, lim::kWidth)),
      flag("--dropout", &C::dropout, "dropout probability").in(examples::below(0, 1)),
      flag("--attn-dropout", &C::attn_dropout, "attention-weight dropout probability").in(examples::below(0, 1)),
      flag("--word-dropout", &C::word_dropout, "share of training tokens replaced by <unk>").in(examples::below(0, 1)),
      flag("--crop", &C::crop, "share of training reviews replaced by a random window of their tokens")
          .in(closed(0, 1)),
      flag("--crop-min", &C::crop_min, "a crop's shortest window, in tokens").in(closed(1, lim::kSequenceLength)),
      flag("--crop-max", &C::crop_max, "a crop's longest window, in tokens").in(closed(1, lim::kSequenceLength)),
      flag("--clause-negation", &C::clause_negation,
           "share of training reviews replaced by one of their clauses where a copula meets a word of the review's "
           "polarity, half of them negated (\"was not superb\") with the label flipped")
          .in(closed(0, 1)),
      flag("--polarity-margin", &C::polarity_margin,
           "|naive-Bayes log-count ratio| from which --clause-negation counts a word as polar")
          .in(examples::above(0)),
      flag("--activation", &C::activation, "relu|gelu").one_of({"relu", "gelu"}),
      flag("--norm", &C::norm, "post|pre: LayerNorm after or before each sublayer").one_of({"post", "pre"}),
      flag("--pooling", &C::pooling, "max|mean|cls").one_of({"max", "mean", "cls"}),
      flag("--pos", &C::pos, "positional encoding: sinusoidal|learned").one_of({"sinusoidal", "learned"}),
      examples::activation_checkpointing_flag<C>(),
  };
}

std::vector<examples::Flag> ngram_flags() {
  using C = Config;
  return {
      flag("--ngram-buckets", &C::ngram_buckets,
           "rows of the hashed n-gram embedding added to the token embeddings (0 = none)")
          .in(examples::zero_or(2, lim::kNgramBuckets)),
      flag("--ngram-max", &C::ngram_max, "longest hashed n-gram (2 = bigrams only)").in(closed(2, lim::kNgramMax)),
      flag("--ngram-dim", &C::ngram_dim, "width of the n-gram table's rows, projected to --d-model (0 = d-model)")
          .in(closed(0, lim::kWidth)),
      flag("--ngram-init", &C::ngram_init,
           "normal|nb: the n-gram table drawn at random and trained, or fixed at each bucket's naive-Bayes "
           "log-count ratio on the training reviews (needs --ngram-dim 1)")
          .one_of({"normal", "nb"}),
      flag("--ngram-min-docs", &C::ngram_min_docs,
           "with --ngram-init nb, buckets held by fewer training reviews read 0")
          .in(closed(0, lim::kBatchSize)),
      flag("--wide-buckets", &C::wide_buckets,
           "rows of a linear model over each review's hashed n-grams, added to the logits (0 = none)")
          .in(examples::zero_or(2, lim::kNgramBuckets)),
      flag("--wide-max-n", &C::wide_max_n, "longest n-gram of the linear model (1 = words only)")
          .in(closed(1, lim::kNgramMax)),
      flag("--wide-nb", &C::wide_nb,
           "scale the linear model's n-gram features by their naive-Bayes log-count ratios on the training reviews "
           "(NBSVM)")
          .or_off("--no-wide-nb"),
      flag("--wide-negation", &C::wide_negation,
           "mark the words between a negation and the next punctuation as n-gram features of their own in the "
           "linear model (\"not ... bad\" is not \"bad\")")
          .or_off("--no-wide-negation"),
      flag("--wide-negation-factor", &C::wide_negation_factor,
           "with --wide-negation, a negated word also counts as itself times a factor learned from this start (-1: "
           "reversed, so that words seldom negated in training are reversed too; 0 = none)")
          .in(closed(-10, 10)),
      flag("--wide-weight-by-length", &C::wide_weight_by_length,
           "fit the linear model's weight in the mixture as a + b ln(review length) rather than one number (its "
           "confidence grows with the length faster than the encoder's)")
          .or_off("--no-wide-weight-by-length"),
      flag("--wide-loss", &C::wide_loss,
           "separate|joint: one loss per part (encoder and linear model), or one on the summed logits")
          .one_of({"joint", "separate"}),
  };
}

std::vector<examples::Flag> optimization_flags() {
  using C = Config;
  return {
      flag("--optimizer", &C::optimizer, "adam|adamw|sgd").one_of({"adam", "adamw", "sgd"}),
      flag("--lr", &C::lr, "peak learning rate (noam: the factor)").in(closed(0, lim::kLearningRate)),
      flag("--warmup", &C::warmup, "warmup steps").in(closed(0, lim::kSteps)),
      flag("--schedule", &C::schedule,
           "constant|linear|cosine|inv-sqrt|noam (linear: warmup, then linear decay to 0 at the last step)")
          .one_of({"constant", "linear", "cosine", "inv-sqrt", "noam"}),
      flag("--betas", &C::betas, "Adam betas"),
      flag("--eps", &C::eps, "Adam epsilon").in(examples::above(0)),
      flag("--weight-decay", &C::weight_decay, "decoupled for adamw, L2 for adam and sgd").in(examples::at_least(0)),
      flag("--momentum", &C::momentum, "sgd momentum").in(examples::below(0, 1)),
      flag("--clip-norm", &C::clip_norm, "gradient norm clipping (0: off)").in(examples::at_least(0)),
      flag("--ema", &C::ema,
           "decay of an exponential moving average of the parameters (torch_ema's rule), used for validation and "
           "the saved model (0: off)")
          .in(examples::below(0, 1)),
      flag("--batch-size", &C::batch_size, "reviews per step").in(closed(1, lim::kBatchSize)),
      examples::accumulate_flag<C>(lim::kBatchSize),
      examples::zero_flag<C>(),
      flag("--epochs", &C::epochs, "passes over the training reviews").in(closed(1, lim::kEpochs)),
      flag("--seed", &C::seed, "seeds the split, the initialization, the shuffle and dropout")
          .in(closed(0, static_cast<long double>(std::numeric_limits<std::int64_t>::max()))),
      flag("--bucket", &C::bucket, "length-bucketing chunk in batches (0: off)").in(closed(0, lim::kSteps)),
      flag("--init-from", &C::init_from,
           "a train_lm --objective masked run: start from its vocabulary, embedding and encoder")
          .shown_as("none"),
  };
}

std::vector<examples::Flag> run_flags() {
  using C = Config;
  return examples::join(
      {flag("--threads", &C::threads, "BLAS threads").in(closed(1, lim::kThreads)).not_saved(),
       flag("--precision", &C::precision, examples::kPrecisionHelp).one_of(examples::kPrecisionChoices),
       examples::saved("precision-resolved", &C::precision_resolved),
       flag("--log-every", &C::log_every, "steps between metrics.jsonl lines and plain progress lines")
           .in(closed(1, lim::kSteps))
           .not_saved(),
       flag("--out", &C::out, "run folder").not_saved()},
      examples::run_flags<C>());
}

// The wide and n-gram tables (their gradients and Adam's moments: 16 bytes per float) within half the
// machine's memory.
std::optional<std::string> ngram_memory_problem(const Config& c) {
  const double memory = examples::physical_memory_bytes();
  const double ngram_bytes = 16.0 * double(c.ngram_buckets) * double(c.ngram_dim == 0 ? c.d_model : c.ngram_dim);
  if (ngram_bytes > memory / 2) {
    return fmt::format(
        "--ngram-buckets {} at --d-model {} needs {:.1f} GB for its table, more than half of this machine's {:.1f} GB",
        c.ngram_buckets, c.d_model, ngram_bytes / 1e9, memory / 1e9);
  }
  // The wide table has a column per class, and the feature scale.
  const double wide_bytes = (16.0 * 2 + (c.wide_nb ? 4.0 : 0.0)) * double(c.wide_buckets);
  if (wide_bytes > memory / 2) {
    return fmt::format("--wide-buckets {} needs {:.1f} GB for its table, more than half of this machine's {:.1f} GB",
                       c.wide_buckets, wide_bytes / 1e9, memory / 1e9);
  }
  return std::nullopt;
}

}  // namespace

const examples::Flags<Config>& flags() {
  static const examples::Flags<Config> table(kProgram, kConfigVersion, examples::Keys::dashes,
                                             {{"Data", data_flags()},
                                              {"Model", model_flags()},
                                              {"Model: n-grams", ngram_flags()},
                                              {"Optimization", optimization_flags()},
                                              {"Run", run_flags()}});
  return table;
}

std::optional<std::string> validate(const Config& c) {
  if (auto problem = flags().check(c)) return problem;
  if (auto problem = examples::accumulate_problem(c.accumulate, c.batch_size)) {
    return problem;
  }
  // The embedding and the positional table grow with the flags.
  if (auto problem = examples::table_memory_problem("--vocab-size", c.vocab_size, "--max-len", c.max_len, c.d_model))
    return problem;
  if (c.ngram_dim > c.d_model) {
    return fmt::format("--ngram-dim {} is outside [0, --d-model {}]", c.ngram_dim, c.d_model);
  }
  if (c.ngram_init == "nb" && c.ngram_buckets > 0 && c.ngram_dim != 1) {
    return fmt::format("--ngram-init nb needs --ngram-dim 1 (one log-count ratio per bucket), got --ngram-dim {}",
                       c.ngram_dim);
  }
  if (auto problem = ngram_memory_problem(c)) return problem;
  if (c.d_model % c.heads != 0) return fmt::format("--d-model {} is not divisible by --heads {}", c.d_model, c.heads);
  if (c.crop_min > c.crop_max) return fmt::format("--crop-min {} is above --crop-max {}", c.crop_min, c.crop_max);
  if ((c.schedule == "inv-sqrt" || c.schedule == "noam") && c.warmup == 0) {
    return fmt::format("--schedule {} needs --warmup >= 1, got {}", c.schedule, c.warmup);
  }
  if (c.optimizer == "adamw") {
    // Noam's --lr is a factor: the rate peaks at step --warmup at --lr / sqrt(--d-model * --warmup).
    const bool noam = c.schedule == "noam";
    const double peak_lr = noam ? tapegrad::optim::Noam(c.d_model, c.warmup, c.lr)(c.warmup) : c.lr;
    const std::string lr_name =
        noam ? fmt::format("the peak rate of --schedule noam, --lr {} / sqrt(--d-model {} * --warmup {}),", c.lr,
                           c.d_model, c.warmup)
             : "--lr";
    if (auto problem = examples::decoupled_decay_problem(peak_lr, c.weight_decay, lr_name)) return problem;
  }
  try {
    const auto [b1, b2] = parse_betas(c.betas);
    for (double b : {b1, b2}) {
      if (!(b >= 0.0 && b < 1.0)) return fmt::format("--betas {} has {} outside [0, 1)", c.betas, b);
    }
  } catch (const std::invalid_argument& e) {
    return fmt::format("--betas {}: {}", c.betas, e.what());
  }
  return examples::precision_problem(c.precision, c.precision_resolved);
}

nlohmann::json to_json(const Config& c) { return flags().to_json(c); }

Config config_from_json(const nlohmann::json& json) { return flags().from_json(json); }

WideAndDeepOptions model_options(const Config& c, std::size_t vocab_size) {
  namespace models = tapegrad::models;
  WideAndDeepOptions wide_and_deep;
  models::TransformerClassifierOptions& o = wide_and_deep.deep;
  o = examples::transformer_options<models::TransformerClassifierOptions>(c, vocab_size, c.max_len);
  o.norm_first = c.norm == "pre";
  // validate() has checked the name.
  o.pooling = c.pooling == "max"   ? models::Pooling::Max
              : c.pooling == "cls" ? models::Pooling::Cls
                                   : models::Pooling::Mean;
  o.ngram_buckets = static_cast<std::size_t>(c.ngram_buckets);
  o.ngram_max = static_cast<std::size_t>(c.ngram_max);
  o.ngram_dim = static_cast<std::size_t>(c.ngram_dim);
  o.num_classes = 2;
  o.activation_checkpointing = c.activation_checkpointing;
  WideAndDeepOptions& w = wide_and_deep;
  w.wide_buckets = static_cast<std::size_t>(c.wide_buckets);
  w.wide_max_n = static_cast<std::size_t>(c.wide_max_n);
  w.wide_feature_scale = c.wide_nb && c.wide_buckets > 0;  // without a wide part there is nothing to scale
  if (c.wide_negation_factor != 0.0 && c.wide_negation && c.wide_buckets > 0)  // else it would act on nothing
    w.wide_negation_factor = c.wide_negation_factor;
  w.wide_weight_by_length = c.wide_weight_by_length && c.wide_buckets > 0;
  return wide_and_deep;
}

}  // namespace imdb
