// Downloading (datasets/download.cpp) from a loopback HTTP server.
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("download from a loopback server: a whole archive lands in the cache, a truncated one leaves nothing",
          "[datasets]") {
  TempDir serve, cache_root;
  const std::string good = read_bytes(kSmallArchive);
  write_file(serve.path / "aclImdb_v1.tar.gz", good);
  write_file(serve.path / "cut.tar.gz", good.substr(0, good.size() - 300));
  LoopbackServer server(serve.path);
  const fs::path cache = cache_root.path / "cache";

  // Through locate_imdb, as the program calls it: nothing local, so it downloads into the cache.
  auto o = isolated_options(cache_root.path);
  o.download = true;
  o.show_progress = true;  // the progress lines go to stderr
  o.url = server.url("aclImdb_v1.tar.gz");
  const auto found = locate_imdb(o);
  CHECK(found.path == cache / "aclImdb_v1.tar.gz");
  CHECK(found.source == "downloaded to the cache");
  CHECK(read_bytes(found.path) == good);
  CHECK(read_imdb(found.path).train.size() == 6);
  CHECK(locate_imdb(o).source == "the cache");  // the second run finds it

  const fs::path dest = cache / "other.tar.gz";
  const auto cache_is_clean = [&] {
    for (const auto& e : fs::directory_iterator(cache))
      if (e.path().filename() != "aclImdb_v1.tar.gz") return false;
    return true;
  };
  const std::string cut = error_of([&] { download_archive(server.url("cut.tar.gz"), dest, false); });
  CHECK_THAT(cut, Catch::Contains("cut.tar.gz") && Catch::Contains("incomplete or corrupt"));
  CHECK_FALSE(fs::exists(dest));
  CHECK(cache_is_clean());
  const std::string missing = error_of([&] { download_archive(server.url("absent.tar.gz"), dest, false); });
  CHECK_THAT(missing, Catch::Contains("absent.tar.gz") && Catch::Contains("404"));
  CHECK(cache_is_clean());

  // A failed download inside locate_imdb reports it along with the places tried.
  fs::remove(cache / "aclImdb_v1.tar.gz");
  o.url = server.url("cut.tar.gz");
  const std::string msg = error_of([&] { locate_imdb(o); });
  CHECK_THAT(msg, Catch::Contains("incomplete or corrupt") && Catch::Contains((cache / "aclImdb_v1.tar.gz").string()));
  CHECK(fs::is_empty(cache));
}
