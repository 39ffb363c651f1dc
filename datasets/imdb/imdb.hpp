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

/// Caps on what read_imdb accepts, so that a hostile file (a 3 MB gzip expanding to a 3 GiB review)
/// is refused with a message instead of exhausting memory. The defaults are far above the real data
/// (its longest review has 13,704 bytes; the archive expands to about 490 MB, the 50,000 labeled
/// reviews hold about 65 MB).
struct ImdbLimits {
  std::uint64_t max_review_bytes = 1ull << 20;   ///< one review file: 1 MiB
  std::uint64_t max_total_bytes = 1ull << 30;    ///< all reviews kept: 1 GiB
  std::uint64_t max_archive_bytes = 4ull << 30;  ///< all archive entries, kept or skipped: 4 GiB
  std::uint64_t max_reviews = 1'000'000;         ///< reviews kept
};

/// Reads both splits (or only train/) from `path`, which is
///  - a folder in the aclImdb layout (holding train/ and test/), or a folder holding aclImdb/, or
///  - a tar archive (optionally gzip/bzip2/xz-compressed) holding aclImdb/ (read once, with libarchive).
/// Only {train,test}/{neg,pos}/`<digits>_<digits>.txt` are reviews; everything else (unsup/, urls_*.txt,
/// labeledBow.feat, README, imdb.vocab) is skipped. Throws std::runtime_error naming the file or folder
/// for a missing path, a corrupt archive, a missing split, an empty class or input beyond `limits`.
ImdbData read_imdb(const std::filesystem::path& path, ImdbSplits splits = ImdbSplits::Both,
                   const ImdbLimits& limits = {});

/// True for a path read_imdb would try to read: an existing regular file, or a folder holding train/
/// and test/ or aclImdb/.
bool looks_like_imdb(const std::filesystem::path& path);

}  // namespace tapegrad::datasets
