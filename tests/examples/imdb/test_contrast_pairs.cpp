// The contrast-pair files: the committed sets read, every malformed file names its line, and the
// pair accuracy.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "examples/imdb/contrast_pairs.hpp"
#include "tests/helpers.hpp"

using namespace imdb;
namespace fs = std::filesystem;
using tapegrad::testing::TempDir;

namespace {
const fs::path kRepoRoot = fs::path(TAPEGRAD_TEST_DATA_DIR).parent_path().parent_path();
}  // namespace

TEST_CASE("contrast pairs: the committed sets read, and every malformed file names its line", "[imdb][contrast]") {
  const auto pairs = read_contrast_pairs(kRepoRoot / "examples/imdb/contrast_pairs.tsv");
  CHECK(pairs.size() >= 50);
  CHECK(pairs.front().positive == "Not bad at all, actually quite good.");
  CHECK(pairs.front().negative == "Not good at all, actually quite bad.");
  // The development pairs, on which settings are chosen, share no review with the test pairs.
  const auto dev = read_contrast_pairs(kRepoRoot / "examples/imdb/contrast_pairs_dev.tsv");
  CHECK(dev.size() == 50);
  std::set<std::string> test_texts;
  for (const auto& p : pairs) test_texts.insert({p.positive, p.negative});
  for (const auto& p : dev) {
    CHECK(test_texts.count(p.positive) == 0);
    CHECK(test_texts.count(p.negative) == 0);
  }
  TempDir dir;
  const auto write = [&](const std::string& body) {
    const auto path = dir.path / "pairs.tsv";
    std::ofstream(path) << body;
    return path;
  };
  CHECK_THROWS_WITH(read_contrast_pairs(write("id\tlabel\ttext\n")), Catch::Contains(":1: expected the header line"));
  CHECK_THROWS_WITH(read_contrast_pairs(write("pair\tlabel\ttext\n1\t1\tgood\n1\t2\tbad\n")),
                    Catch::Contains(":3: label must be 0 or 1, got '2'"));
  CHECK_THROWS_WITH(read_contrast_pairs(write("pair\tlabel\ttext\n1\t1\tgood\n1\t1\tfine\n")),
                    Catch::Contains(":3: pair 1 has a second review labelled 1"));
  CHECK_THROWS_WITH(read_contrast_pairs(write("pair\tlabel\ttext\n1\t1\tgood\n")),
                    Catch::Contains("pair 1 lacks its negative review"));
  CHECK_THROWS_WITH(read_contrast_pairs(write("pair\tlabel\ttext\n1\t1\n")),
                    Catch::Contains(":2: expected 3 tab-separated columns, got 2"));
  CHECK_THROWS_WITH(read_contrast_pairs(dir.path / "missing.tsv"), Catch::Contains("cannot open"));
  CHECK(contrast_pair_accuracy({0.9, 0.9, 0.2}, {0.1, 0.6, 0.1}) == Approx(1.0 / 3));
  CHECK_THROWS_WITH(contrast_pair_accuracy({0.9}, {}), Catch::Contains("1 positive but 0 negative"));
}
