#include "tapegrad/datasets/imdb/locate.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "tapegrad/datasets/imdb/imdb.hpp"

namespace tapegrad::datasets {

namespace fs = std::filesystem;

namespace {
constexpr const char* kNames[3] = {"aclImdb", "aclImdb_v1.tar.gz", "aclImdb_labeled.tar.gz"};
}

std::optional<fs::path> default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "tapegrad";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "tapegrad";
  return std::nullopt;
}

LocateOptions LocateOptions::from_environment() {
  LocateOptions o;
  if (const char* env = std::getenv("TAPEGRAD_DATA"); env && *env) o.env_path = fs::path(env);
  o.working_dir = fs::current_path();
  o.cache_dir = default_cache_dir();
  return o;
}

Located locate_imdb(const LocateOptions& o) {
  if (o.explicit_path) {
    if (!looks_like_imdb(*o.explicit_path))
      throw std::runtime_error(
          fmt::format("--data '{}': no such archive, or not a folder holding aclImdb data", o.explicit_path->string()));
    return {*o.explicit_path, "--data"};
  }
  if (o.env_path) {
    if (!looks_like_imdb(*o.env_path))
      throw std::runtime_error(fmt::format("TAPEGRAD_DATA='{}': no such archive, or not a folder holding aclImdb data",
                                           o.env_path->string()));
    return {*o.env_path, "TAPEGRAD_DATA"};
  }
  std::vector<std::string> tried = {"--data (not given)", "TAPEGRAD_DATA (not set)"};
  const auto check = [&](const fs::path& p) {
    tried.push_back(p.string());
    return looks_like_imdb(p);
  };
  for (const auto& place : o.places)
    if (check(place.path)) return {place.path, place.source};
  for (const char* name : kNames)
    if (const fs::path p = o.working_dir / "data" / name; check(p)) return {p, "data/ in the working directory"};
  if (o.cache_dir) {
    for (const char* name : kNames)
      if (const fs::path p = *o.cache_dir / name; check(p)) return {p, "the cache"};
  } else {
    tried.push_back("the cache (neither XDG_CACHE_HOME nor HOME is set)");
  }

  std::string failure;
  if (!o.download) {
    failure = "downloading is off (--no-download)";
  } else if (!o.cache_dir) {
    failure = "there is no cache folder to download into";
  } else {
    const fs::path dest = *o.cache_dir / "aclImdb_v1.tar.gz";
    try {
      download_archive(o.url, dest, o.show_progress);
      return {dest, "downloaded to the cache"};
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  std::string msg = "IMDb data not found. Tried, in order:\n";
  for (const auto& t : tried) msg += fmt::format("  {}\n", t);
  msg += fmt::format("Not downloaded: {}.\n", failure);
  msg += fmt::format("Download {} and put it in {} or in {}, or pass --data <file or folder> or set TAPEGRAD_DATA.",
                     o.url, o.cache_dir ? o.cache_dir->string() : std::string("~/.cache/tapegrad"),
                     (o.working_dir / "data").string());
  throw std::runtime_error(msg);
}

}  // namespace tapegrad::datasets
