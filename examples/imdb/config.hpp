// The settings of an IMDb training run: every flag of train_imdb with its default, in one place, and
// their checks. config.json holds exactly these, so evaluate/predict rebuild the model from it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "examples/common/flags.hpp"
#include "examples/imdb/wide_and_deep.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/train/errors.hpp"

namespace imdb {

struct Config {
  // Data.
  std::string data;  // empty: found by datasets::locate_imdb
  bool no_download = false;
  std::int64_t vocab_size = 50000;  // including <pad> and <unk>
  std::int64_t max_len = 1024;
  std::string truncate = "head+tail";  // head | tail | head+tail
  double valid_fraction = 0.1;         // the held-out share of train/ (0: none, the last epoch is kept)

  // Model.
  std::int64_t layers = 1;
  std::int64_t d_model = 64;
  std::int64_t heads = 4;
  std::int64_t ff = 128;
  double dropout = 0.3;
  double attn_dropout = 0.1;
  double word_dropout = 0.1;  // share of training tokens replaced by <unk>
  // Random crops: the share of training reviews replaced by a window of their own tokens, of a length
  // uniform in [crop_min, crop_max] (datasets::random_crop).
  double crop = 0.1;
  std::int64_t crop_min = 8;
  std::int64_t crop_max = 64;
  // Counterfactual negation: the share of training reviews replaced by one of their clauses where a
  // copula meets a word of the review's polarity, half of them negated with the label flipped
  // (features::ClauseNegation); polarity_margin is the |log-count ratio| that makes a word polar.
  double clause_negation = 0.25;
  double polarity_margin = 1.0;
  std::string activation = "relu";        // relu | gelu
  std::string norm = "post";              // post | pre
  std::string pooling = "mean";           // max | mean | cls
  std::string pos = "sinusoidal";         // sinusoidal | learned
  bool activation_checkpointing = false;  // each encoder layer recomputed in backward
  // Hashed n-gram embeddings added to the token embeddings (fastText's bigrams and trigrams): the
  // table's rows, 0 = none; and the longest n-gram (2 .. ngram_max).
  std::int64_t ngram_buckets = 8'000'000;
  std::int64_t ngram_max = 3;
  std::int64_t ngram_dim = 1;  // the n-gram table's width, projected to d_model; 0 = d_model
  // How the n-gram table starts: "normal" (drawn like the token embeddings, and trained) or "nb" (one
  // column, each bucket's naive-Bayes log-count ratio over the training reviews, and fixed: the encoder
  // reads at each position how strongly the bigram and trigram that end there lean to either label).
  std::string ngram_init = "nb";
  // With "nb", buckets held by fewer training reviews than this read 0: a rarer n-gram's ratio mostly
  // restates the labels of the reviews that hold it, which the encoder would learn to trust.
  std::int64_t ngram_min_docs = 10;
  // A linear model over each review's set of hashed n-grams (1 .. wide_max_n) whose logits are added to
  // the encoder's: the table's rows, 0 = none; and how it trains: "separate" (each part's own loss,
  // summed, so that neither leans on the other; their weights are fitted on validation afterwards) or
  // "joint" (one loss on the summed logits).
  std::int64_t wide_buckets = 0;
  std::int64_t wide_max_n = 3;
  std::string wide_loss = "separate";  // separate | joint
  bool wide_nb =
      true;  // scale the wide part's features by naive Bayes' log-count ratios (NBSVM); no effect without one
  // Mark the words in a negation's scope as features apart in the wide part (features::NegationScope
  // with English's negators); no effect without one.
  bool wide_negation = true;
  // The initial value of a learned factor with which a word in a negation's scope also counts as its
  // plain self in the wide part (features::HashedNgramBag's negation_factor); 0 = none. Needs wide_negation.
  double wide_negation_factor = -1.0;
  // The wide part's weight in the mixture depends on the review's length (a + b ln n, fitted on
  // validation with the encoder's weight): the n-gram part's confidence grows with length faster than
  // the encoder's.
  bool wide_weight_by_length = true;

  // Optimization.
  std::string optimizer = "adamw";  // adam | adamw | sgd
  double lr = 1e-3;
  std::int64_t warmup = 100;        // steps
  std::string schedule = "linear";  // constant | linear | cosine | inv-sqrt | noam
  std::string betas = "0.9,0.999";  // adam, adamw
  double eps = 1e-8;
  double weight_decay = 0.1;
  double momentum = 0.9;   // sgd
  double clip_norm = 1.0;  // 0 disables
  double ema = 0.0;        // decay of the parameters' moving average used to evaluate and save; 0 = off
  std::int64_t batch_size = 64;
  std::int64_t accumulate = 1;  // micro-batches per step (gradient accumulation)
  std::int64_t zero = 0;        // ZeRO stage under mpirun (0: none)
  std::int64_t epochs = 4;
  std::int64_t seed = 0;
  std::int64_t bucket = 50;  // bucketing chunk in batches, 0 = off
  // A train_lm --objective masked run (a folder): its vocabulary, and its embedding and encoder as the
  // model's starting point (the classification head stays freshly initialized). Empty: none.
  std::string init_from;
  // fp32 | bf16 (the forward and backward under tapegrad::autocast) | auto (bf16 where the CPU has native
  // bfloat16 products).
  std::string precision = "auto";
  // What precision resolved to when the run started (fp32 | bf16), which --resume keeps; train() sets
  // it, empty before.
  std::string precision_resolved;

  // The run itself (not saved: they do not change the result).
  std::int64_t threads = 2;
  std::int64_t log_every = 50;  // steps between metrics.jsonl lines and plain progress lines
  std::string out = "runs/imdb";
  bool resume = false;
  bool overwrite = false;       // a new run may replace the run already in --out
  bool detect_anomaly = false;  // tapegrad::DetectAnomalyGuard around training: names the op of a NaN
};

// Every flag of train_imdb and config.json's keys, declared once (examples/common/flags.hpp).
inline constexpr const char* kProgram = "train_imdb";
inline constexpr int kConfigVersion = 3;
const examples::Flags<Config>& flags();

// A bad setting, also one found only once the data is known (e.g. more warmup steps than training
// steps) or a --resume that contradicts the saved run: train_imdb prints its message and exits 2.
using tapegrad::train::UsageError;

// The first bad setting as one line naming the flag and the value ("--d-model 63 is not divisible by
// --heads 4"), or nothing when all are valid. Files are not looked at here.
std::optional<std::string> validate(const Config& config);

// "0.9,0.999" -> {0.9, 0.999}; throws std::invalid_argument for anything else.
std::pair<double, double> parse_betas(const std::string& text);
tapegrad::datasets::Truncation truncation_of(const Config& config);

// The settings that define the run, keyed by flag name without "--" ("d-model"), and "version":
// config.json.
nlohmann::json to_json(const Config& config);
// Reads what to_json wrote, strictly; throws std::runtime_error naming the key (or the version) at fault.
Config config_from_json(const nlohmann::json& json);

// The model the settings describe, over a vocabulary of vocab_size tokens (the built vocabulary,
// which may be smaller than --vocab-size on a small corpus).
WideAndDeepOptions model_options(const Config& config, std::size_t vocab_size);

}  // namespace imdb
