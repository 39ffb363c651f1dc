#include "examples/lm/data.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <tuple>

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
  auto where = ds::LocateOptions::from_environment(TAPEGRAD_SOURCE_DIR);
  if (!config.data.empty()) where.explicit_path = config.data;
  where.download = !config.no_download;
  const ds::Located located = ds::locate_imdb(where);
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
  Data data{saved ? *saved : build_vocabulary(), {}, {}, located.path, located.source, 0.0};
  const auto encode = [&](const std::vector<std::size_t>& indices) {
    // Reviews of fewer than 2 tokens have nothing to predict (causal) or to predict from.
    std::vector<std::size_t> usable;
    for (std::size_t i : indices) {
      std::size_t tokens = 0;
      ds::for_each_token(reviews.train[i].text, [&](std::string_view) { ++tokens; });
      if (tokens >= 2) usable.push_back(i);
    }
    return ds::EncodedDataset::encode(reviews.train, usable, data.vocab, kept_tokens(config), ds::Truncation::head);
  };
  data.train = encode(split.train);
  data.valid = encode(split.valid);
  // Without such a review there is nothing to train on (the loader's 0 batches ended in a division by
  // zero) or to validate on (a perplexity of 0 tokens was reported as 1.00).
  for (const auto& [part, indices, encoded] :
       {std::tuple{"training", &split.train, &data.train}, std::tuple{"validation", &split.valid, &data.valid}}) {
    if (encoded->size() == 0) {
      throw std::runtime_error(fmt::format("{}: none of the {} {} reviews has the 2 tokens a language model needs",
                                           located.path.string(), indices->size(), part));
    }
  }
  data.seconds = clock.seconds();
  return data;
}

std::vector<BaselineScore> bigram_baselines(const Data& data) {
  using tapegrad::models::BigramLM;
  using tapegrad::models::BigramSmoothing;
  std::vector<BaselineScore> scores;
  for (auto [smoothing, name] : {std::pair{BigramSmoothing::AddOne, "add-one bigram"},
                                 std::pair{BigramSmoothing::KneserNey, "Kneser-Ney bigram"}}) {
    BigramLM model(data.vocab.size(), smoothing);
    for (std::size_t i = 0; i < data.train.size(); ++i) model.add_sequence(data.train.ids(i), data.train.length(i));
    BaselineScore s;
    s.name = name;
    double nll = 0.0;
    for (std::size_t i = 0; i < data.valid.size(); ++i) {
      const auto r = model.score_sequence(data.valid.ids(i), data.valid.length(i));
      nll += r.nll;
      s.tokens += r.count;
    }
    s.loss = s.tokens ? nll / double(s.tokens) : 0.0;
    s.perplexity = std::exp(s.loss);
    scores.push_back(s);
  }
  return scores;
}

}  // namespace lm
