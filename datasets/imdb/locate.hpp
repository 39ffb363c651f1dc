/// @file
/// Finding the IMDb data on this machine, or downloading it into the user's cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/datasets/download.hpp"

namespace tapegrad::datasets {

/// The official archive of Maas et al. (about 84 MB).
inline constexpr const char* kImdbUrl = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz";

/// A place a program knows the data may be (an archive or a folder), and how to name it in messages.
struct DataPlace {
  std::filesystem::path path;
  std::string source;  ///< e.g. "a copy shared between checkouts"
};

/// Where locate_imdb() looks and whether it may download.
struct LocateOptions {
  std::optional<std::filesystem::path> explicit_path;  ///< the program's --data flag
  std::optional<std::filesystem::path> env_path;       ///< TAPEGRAD_DATA
  std::vector<DataPlace> places;                       ///< the program's own places, none by default
  std::filesystem::path working_dir;                   ///< where data/ is looked for
  std::optional<std::filesystem::path> cache_dir;      ///< none when neither XDG_CACHE_HOME nor HOME is set
  bool download = true;                                ///< false: the program's --no-download
  std::string url = kImdbUrl;
  bool show_progress = true;

  /// TAPEGRAD_DATA, the current directory and default_cache_dir() from this process.
  static LocateOptions from_environment();
};

/// $XDG_CACHE_HOME/tapegrad when XDG_CACHE_HOME is set to an absolute path (the XDG spec ignores a
/// relative one), else $HOME/.cache/tapegrad; none when HOME is not set either.
std::optional<std::filesystem::path> default_cache_dir();

/// The data locate_imdb() found and the rule that found it.
struct Located {
  std::filesystem::path path;  ///< a folder or an archive, for read_imdb
  std::string source;          ///< which rule found it, e.g. "TAPEGRAD_DATA" or "downloaded to the cache"
};

/// Looks, in this order, at
///  1. explicit_path and 2. env_path: when given they must exist (a typo is an error, not a fallback);
///  3. places, in their order;
///  4. working_dir/data/: aclImdb/, aclImdb_v1.tar.gz, aclImdb_labeled.tar.gz;
///  5. cache_dir: the same three names;
/// and when none holds the data and download is on, downloads url to cache_dir/aclImdb_v1.tar.gz.
/// Otherwise throws std::runtime_error listing every place tried and where to put the file.
Located locate_imdb(const LocateOptions& options);

}  // namespace tapegrad::datasets
