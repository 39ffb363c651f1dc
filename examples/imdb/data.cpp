#include "examples/imdb/data.hpp"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "examples/common/imdb_data.hpp"

namespace imdb {

namespace ds = tapegrad::datasets;

RawData read_data(const std::string& data_flag, bool no_download) {
  const auto start = std::chrono::steady_clock::now();
  const ds::Located located = ds::locate_imdb(examples::imdb_locate_options(data_flag, no_download));
  RawData raw;
  raw.reviews = ds::read_imdb(located.path);
  raw.path = located.path;
  raw.source = located.source;
  raw.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return raw;
}

ds::TrainValidSplit split_of(const RawData& raw, const Config& config) {
  return ds::train_valid_split(raw.reviews.train, config.valid_fraction, static_cast<std::uint64_t>(config.seed));
}

ds::Vocabulary build_vocabulary(const RawData& raw, const ds::TrainValidSplit& split, const Config& config) {
  std::vector<std::string_view> texts;
  texts.reserve(split.train.size());
  for (const auto i : split.train) texts.push_back(raw.reviews.train[i].text);
  ds::Vocabulary vocab = ds::Vocabulary::build(texts, static_cast<std::size_t>(config.vocab_size));
  if (vocab.size() == 2) {  // only <pad> and <unk>: a model would train on nothing and report chance
    throw std::runtime_error(fmt::format("{}: the {} training reviews hold no tokens (all empty or whitespace)",
                                         raw.path.string(), texts.size()));
  }
  return vocab;
}

EncodedSplits encode_splits(const RawData& raw, const ds::TrainValidSplit& split, const ds::Vocabulary& vocab,
                            const Config& config) {
  const auto max_len = static_cast<std::size_t>(config.max_len);
  const auto truncation = truncation_of(config);
  EncodedSplits out;
  out.train = ds::EncodedDataset::encode(raw.reviews.train, split.train, vocab, max_len, truncation);
  out.valid = ds::EncodedDataset::encode(raw.reviews.train, split.valid, vocab, max_len, truncation);
  out.test = ds::EncodedDataset::encode(raw.reviews.test, vocab, max_len, truncation);
  return out;
}

}  // namespace imdb
