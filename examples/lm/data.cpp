#include "examples/lm/data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "examples/common/imdb_data.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/imdb/locate.hpp"
#include "tapegrad/datasets/text/split.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/models/ngram.hpp"
#include "tapegrad/train/timing.hpp"

namespace lm {

namespace ds = tapegrad::datasets;

std::size_t kept_tokens(const Config& config) {
  return static_cast<std::size_t>(config.context) + (config.objective == "causal" ? 1 : 0);
}

Data prepare_data(const Config& config, const std::optional<ds::Vocabulary>& saved) {
  const tapegrad::train::Stopwatch clock;
  const ds::Located located = ds::locate_imdb(examples::imdb_locate_options(config.data, config.no_download));
  const ds::ImdbData reviews = ds::read_imdb(located.path, ds::ImdbSplits::TrainOnly);
  // train_imdb's split: the same fraction and seed give the same validation reviews.
  const auto split =
      ds::train_valid_split(reviews.train, config.valid_fraction, static_cast<std::uint64_t>(config.seed));
  const auto build_vocabulary = [&] {
    std::vector<std::string_view> texts;
    texts.reserve(split.train.size());
    for (std::size_t i : split.train) texts.emplace_back(reviews.train[i].text);
    const auto vocab = ds::Vocabulary::build(texts, static_cast<std::size_t>(config.vocab_size));
    return config.objective == "masked" ? vocab.with_mask_token() : vocab;
  };
  Data data{saved ? *saved : build_vocabulary(), {}, {}, {}, located.path, located.source, 0.0};
  // Reviews of fewer than 2 tokens have nothing to predict (causal) or to predict from.
  const auto usable = [&](const std::vector<std::size_t>& indices) {
    std::vector<std::size_t> kept;
    for (std::size_t i : indices) {
      std::size_t tokens = 0;
      ds::for_each_token(reviews.train[i].text, [&](std::string_view) { ++tokens; });
      if (tokens >= 2) kept.push_back(i);
    }
    return kept;
  };
  const auto encode = [&](const std::vector<std::size_t>& indices) {
    return ds::EncodedDataset::encode(reviews.train, indices, data.vocab, kept_tokens(config), ds::Truncation::head);
  };
  const std::vector<std::size_t> valid = usable(split.valid);
  data.train = encode(usable(split.train));
  data.valid = encode(valid);
  // Without such a review there is nothing to train on (the loader's 0 batches ended in a division by
  // zero) or to validate on (a perplexity of 0 tokens was reported as 1.00).
  for (const auto& [part, indices, encoded] :
       {std::tuple{"training", &split.train, &data.train}, std::tuple{"validation", &split.valid, &data.valid}}) {
    if (encoded->size() == 0) {
      throw std::runtime_error(fmt::format("{}: none of the {} {} reviews has the 2 tokens a language model needs",
                                           located.path.string(), indices->size(), part));
    }
  }
  const auto sample = static_cast<std::size_t>(config.valid_reviews);
  if (sample == 0 || sample >= valid.size()) {
    data.valid_sample = data.valid;
  } else {
    // Its own stream ("valid" in ASCII), so that the choice does not follow the split's permutation.
    tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed) ^ 0x76616c6964ULL);
    std::vector<std::size_t> order = gen.permutation(valid.size()), chosen;
    order.resize(sample);
    std::sort(order.begin(), order.end());
    for (std::size_t k : order) chosen.push_back(valid[k]);
    data.valid_sample = encode(chosen);
  }
  data.seconds = clock.seconds();
  return data;
}

std::vector<BaselineScore> bigram_baselines(const Data& data) {
  using tapegrad::models::BigramLM;
  using tapegrad::models::BigramSmoothing;
  // The mean negative log-likelihood per target over a set of reviews, and the number of targets.
  const auto score = [](const BigramLM& model, const ds::EncodedDataset& reviews) {
    double nll = 0.0;
    std::size_t tokens = 0;
    for (std::size_t i = 0; i < reviews.size(); ++i) {
      const auto r = model.score_sequence(reviews.ids(i), reviews.length(i));
      nll += r.nll;
      tokens += r.count;
    }
    return std::pair{tokens ? nll / double(tokens) : 0.0, tokens};
  };
  std::vector<BaselineScore> scores;
  for (auto [smoothing, name] : {std::pair{BigramSmoothing::AddOne, "add-one bigram"},
                                 std::pair{BigramSmoothing::KneserNey, "Kneser-Ney bigram"}}) {
    BigramLM model(data.vocab.size(), smoothing);
    for (std::size_t i = 0; i < data.train.size(); ++i) model.add_sequence(data.train.ids(i), data.train.length(i));
    BaselineScore s;
    s.name = name;
    std::tie(s.loss, s.tokens) = score(model, data.valid);
    s.perplexity = std::exp(s.loss);
    s.sample_loss = score(model, data.valid_sample).first;
    s.sample_perplexity = std::exp(s.sample_loss);
    scores.push_back(s);
  }
  return scores;
}

}  // namespace lm
