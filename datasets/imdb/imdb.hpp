/// @file
/// Reading the IMDb movie-review corpus (Maas et al. 2011) in its aclImdb layout, from a folder or a
/// tar archive: aclImdb/{train,test}/{neg,pos}/`<id>_<rating>.txt`, 12,500 reviews per split and class.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tapegrad::datasets {

/// One review file.
struct Review {
  std::string text;    ///< the raw bytes of the file
  std::int64_t label;  ///< from the folder: neg = 0, pos = 1
  int rating;          ///< from the file name: 1-4 for neg, 7-10 for pos in the official data
  std::int64_t id;     ///< from the file name; unique within a split and class
};

/// Both splits of the corpus, in a fixed order.
struct ImdbData {
  /// Each split holds its neg reviews by ascending id, then its pos reviews by ascending id, so a folder
  /// and an archive of the same data give the same vectors whatever order their entries come in.
  std::vector<Review> train;
  std::vector<Review> test;
};

/// Which splits read_imdb reads.
enum class ImdbSplits {
  Both,       ///< train and test
  TrainOnly,  ///< test/ is never read (its archive entries are skipped unread): ImdbData::test stays empty
};

/// Reads both splits (or only train/) from `path`, which is
///  - a folder in the aclImdb layout (holding train/ and test/), or a folder holding aclImdb/, or
///  - a tar archive (optionally gzip/bzip2/xz-compressed) holding aclImdb/ (read once, with libarchive).
/// Only {train,test}/{neg,pos}/`<digits>_<digits>.txt` are reviews; everything else (unsup/, urls_*.txt,
/// labeledBow.feat, README, imdb.vocab) is skipped. Throws std::runtime_error naming the file or folder
/// for a missing path, a corrupt archive, a missing split or an empty class.
ImdbData read_imdb(const std::filesystem::path& path, ImdbSplits splits = ImdbSplits::Both);

/// True for a path read_imdb would try to read: an existing regular file, or a folder holding train/
/// and test/ or aclImdb/.
bool looks_like_imdb(const std::filesystem::path& path);

}  // namespace tapegrad::datasets
