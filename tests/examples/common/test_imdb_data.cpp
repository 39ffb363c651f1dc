// Where the programs look for IMDb: the --data flag first, then TAPEGRAD_DATA, the copy shared between
// checkouts beside the source tree, data/ and the cache, as datasets::locate_imdb walks them.
#include <catch2/catch.hpp>
#include <filesystem>

#include "examples/common/imdb_data.hpp"

namespace fs = std::filesystem;

TEST_CASE("imdb_locate_options: --data, --no-download and the shared copy beside the repository", "[imdb][data]") {
  const auto options = examples::imdb_locate_options("", false);
  CHECK_FALSE(options.explicit_path.has_value());
  CHECK(options.download);
  REQUIRE(options.places.size() == 1);
  // The repository is the parent of tests/data; the shared copy lies next to the repository.
  const fs::path repo = fs::path(TAPEGRAD_TEST_DATA_DIR).parent_path().parent_path();
  CHECK(options.places[0].path == (repo / ".." / "shared" / "data" / "aclImdb_labeled.tar.gz").lexically_normal());
  CHECK(options.places[0].source == "the shared data next to the repository");
  const auto given = examples::imdb_locate_options("/some/aclImdb.tar.gz", true);
  CHECK(given.explicit_path == fs::path("/some/aclImdb.tar.gz"));
  CHECK_FALSE(given.download);
}
