// The data side of a run: finding and reading IMDb, the seeded validation split, the vocabulary and
// the encoded splits.
#pragma once

#include <filesystem>
#include <string>

#include "examples/imdb/config.hpp"
#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/split.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

namespace imdb {

struct RawData {
  tapegrad::datasets::ImdbData reviews;
  std::filesystem::path path;  // where it was read from
  std::string source;          // which rule found it ("--data", "../shared/data", ...)
  double seconds = 0.0;        // locating and reading
};

// Finds the data where examples::imdb_locate_options says, with data_flag (--data) first and no
// download when no_download, then reads it. Throws std::runtime_error naming the places tried or the bad file.
RawData read_data(const std::string& data_flag, bool no_download);

// The validation split of config (seeded with config.seed).
tapegrad::datasets::TrainValidSplit split_of(const RawData& raw, const Config& config);

// The vocabulary built on the training part of the split only.
tapegrad::datasets::Vocabulary build_vocabulary(const RawData& raw, const tapegrad::datasets::TrainValidSplit& split,
                                                const Config& config);

struct EncodedSplits {
  tapegrad::datasets::EncodedDataset train, valid, test;
};
EncodedSplits encode_splits(const RawData& raw, const tapegrad::datasets::TrainValidSplit& split,
                            const tapegrad::datasets::Vocabulary& vocab, const Config& config);

}  // namespace imdb
