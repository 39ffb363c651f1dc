// io::write_file_atomically, the one writer of every run file: the old file or the new one, never a
// mix, and no temporary file of a killed save outlives the next save to that path.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tapegrad/io/atomic_file.hpp"
#include "tests/helpers.hpp"

namespace fs = std::filesystem;
using tapegrad::testing::TempDir;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("write_file_atomically: the parts in order, the file replaced, no temporary file left", "[io]") {
  TempDir tmp;
  const fs::path path = tmp.path / "a.txt";
  tapegrad::io::write_file_atomically(path, "first");
  tapegrad::io::write_file_atomically(path, std::vector<std::string_view>{"sec", "", "ond"});
  CHECK(read_text(path) == "second");
  CHECK(names_in(tmp.path) == std::vector<std::string>{"a.txt"});
  CHECK_THROWS_WITH(tapegrad::io::write_file_atomically(tmp.path / "missing" / "b.txt", "x"),
                    Catch::StartsWith((tmp.path / "missing" / "b.txt").string() + ": cannot create temporary file"));
}

TEST_CASE("write_file_atomically removes the temporary files that killed writes to the same path left", "[io]") {
  TempDir tmp;
  const fs::path path = tmp.path / "metrics.jsonl";
  const std::string dead = std::to_string(tapegrad::testing::exited_pid());
  const std::string alive = std::to_string(::getppid());
  // Both name forms: "<pid>.<n>", and "<pid>" of the text files written before this writer.
  const std::vector<std::string> debris = {"metrics.jsonl.tmp." + dead + ".0", "metrics.jsonl.tmp." + dead};
  const std::vector<std::string> kept = {
      "metrics.jsonl.tmp." + alive + ".3",  // a running process may be saving right now
      "config.json.tmp." + dead + ".0",     // another file's: removed by that file's next save
      "metrics.jsonl.tmp.notapid.0",        // only looks similar
      "metrics.jsonl.tmp." + dead + ".x",
  };
  for (const auto& name : debris) write_text(tmp.path / name, std::string(1000, 'x'));
  for (const auto& name : kept) write_text(tmp.path / name, "keep");
  tapegrad::io::write_file_atomically(path, "{}\n");
  for (const auto& name : debris) CHECK_FALSE(fs::exists(tmp.path / name));
  for (const auto& name : kept) CHECK(fs::exists(tmp.path / name));
  CHECK(read_text(path) == "{}\n");
}
