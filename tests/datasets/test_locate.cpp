// Locating the IMDb data (datasets/imdb/locate.cpp): the places tried, in order, and the cache folder.
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("locate: nothing found with download off lists every place tried", "[datasets]") {
  TempDir tmp;
  const auto o = isolated_options(tmp.path);
  const std::string msg = error_of([&] { locate_imdb(o); });
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("--data") && Catch::Contains("TAPEGRAD_DATA") && Catch::Contains("--no-download"));
  CHECK_THAT(msg, Catch::Contains((tmp.path / "shared/data/aclImdb_labeled.tar.gz").string()) &&
                      Catch::Contains((tmp.path / "mirror/aclImdb").string()));
  // Without places of the program's, none is looked at.
  auto no_places = o;
  no_places.places.clear();
  CHECK_THAT(error_of([&] { locate_imdb(no_places); }), !Catch::Contains("shared") && !Catch::Contains("mirror"));
  for (const char* name : {"aclImdb", "aclImdb_v1.tar.gz", "aclImdb_labeled.tar.gz"}) {
    CHECK_THAT(msg, Catch::Contains((tmp.path / "work/data" / name).string()));
    CHECK_THAT(msg, Catch::Contains((tmp.path / "cache" / name).string()));
  }
  CHECK_THAT(msg, Catch::Contains(kImdbUrl));  // where to get the file
  // Offline: nothing listens on 127.0.0.1:1, so the download fails and the message says so, places too.
  auto offline = o;
  offline.download = true;
  offline.url = "http://127.0.0.1:1/aclImdb_v1.tar.gz";
  const std::string offline_msg = error_of([&] { locate_imdb(offline); });
  CHECK_THAT(offline_msg, Catch::Contains("download of http://127.0.0.1:1/aclImdb_v1.tar.gz failed") &&
                              Catch::Contains((tmp.path / "work/data/aclImdb").string()) &&
                              Catch::Contains("TAPEGRAD_DATA"));
  CHECK_FALSE(fs::exists(tmp.path / "cache/aclImdb_v1.tar.gz"));
  auto no_cache = o;
  no_cache.cache_dir.reset();
  CHECK_THAT(error_of([&] { locate_imdb(no_cache); }), Catch::Contains("HOME"));
}

TEST_CASE("locate: --data, TAPEGRAD_DATA, the program's places, data/, cache, in that order", "[datasets]") {
  TempDir tmp;
  auto o = isolated_options(tmp.path);
  const fs::path cache = tmp.path / "cache/aclImdb_v1.tar.gz";
  fs::create_directories(cache.parent_path());
  fs::copy_file(kSmallArchive, cache);
  CHECK(locate_imdb(o).path == cache);
  CHECK(locate_imdb(o).source == "the cache");
  const fs::path work_archive = tmp.path / "work/data/aclImdb_labeled.tar.gz";
  fs::create_directories(work_archive.parent_path());
  fs::copy_file(kSmallArchive, work_archive);
  CHECK(locate_imdb(o).path == work_archive);
  const fs::path work_folder = tmp.path / "work/data/aclImdb";
  fs::copy(kSmallFolder / "aclImdb", work_folder, fs::copy_options::recursive);
  CHECK(locate_imdb(o).path == work_folder);
  CHECK(read_imdb(locate_imdb(o).path).test.size() == 6);
  const fs::path mirror = tmp.path / "mirror/aclImdb";
  fs::create_directories(mirror.parent_path());
  fs::copy(kSmallFolder / "aclImdb", mirror, fs::copy_options::recursive);
  CHECK(locate_imdb(o).path == mirror);
  CHECK(locate_imdb(o).source == "the mirror");
  const fs::path shared = tmp.path / "shared/data/aclImdb_labeled.tar.gz";
  fs::create_directories(shared.parent_path());
  fs::copy_file(kSmallArchive, shared);
  CHECK(locate_imdb(o).path == shared);  // the first place holding the data
  CHECK(locate_imdb(o).source == "the shared copy");
  o.env_path = kSmallFolder;
  CHECK(locate_imdb(o).path == kSmallFolder);
  CHECK(locate_imdb(o).source == "TAPEGRAD_DATA");
  o.explicit_path = kSmallArchive;
  CHECK(locate_imdb(o).path == kSmallArchive);
  // A path the user named must exist: no silent fallback.
  o.explicit_path = tmp.path / "typo.tar.gz";
  CHECK_THAT(error_of([&] { locate_imdb(o); }), Catch::Contains("--data") && Catch::Contains("typo.tar.gz"));
  o.explicit_path.reset();
  o.env_path = tmp.path / "typo2";
  CHECK_THAT(error_of([&] { locate_imdb(o); }), Catch::Contains("TAPEGRAD_DATA") && Catch::Contains("typo2"));
}

TEST_CASE("locate: the cache folder follows XDG_CACHE_HOME, else HOME", "[datasets]") {
  const auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto xdg = saved("XDG_CACHE_HOME"), home = saved("HOME"), data = saved("TAPEGRAD_DATA");
  setenv("HOME", "/home/someone", 1);
  setenv("XDG_CACHE_HOME", "/var/cache/xdg", 1);
  CHECK(default_cache_dir() == fs::path("/var/cache/xdg/tapegrad"));
  setenv("XDG_CACHE_HOME", "relative/cache", 1);  // ignored, as the XDG spec says
  CHECK(default_cache_dir() == fs::path("/home/someone/.cache/tapegrad"));
  unsetenv("XDG_CACHE_HOME");
  CHECK(default_cache_dir() == fs::path("/home/someone/.cache/tapegrad"));
  setenv("TAPEGRAD_DATA", "/some/where.tar.gz", 1);
  const auto o = LocateOptions::from_environment();
  CHECK(o.env_path == fs::path("/some/where.tar.gz"));
  CHECK(o.places.empty());  // where else to look is the program's to say
  CHECK(o.cache_dir == fs::path("/home/someone/.cache/tapegrad"));
  CHECK(o.download);
  CHECK(o.url == kImdbUrl);
  const auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      setenv(name, v->c_str(), 1);
    else
      unsetenv(name);
  };
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
  restore("TAPEGRAD_DATA", data);
}
