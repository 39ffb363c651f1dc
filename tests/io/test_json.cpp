// io::parse_json and read_json_file: the bounded parse of every JSON a program reads back
// (safetensors headers, config.json, metrics.jsonl, checkpoint metadata).
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "tapegrad/io/json.hpp"
#include "tests/helpers.hpp"

using tapegrad::io::parse_json;

TEST_CASE("parse_json: nesting bounded, bad JSON and huge numbers as std::runtime_error", "[io]") {
  CHECK(parse_json(R"({"a": [1, {"b": 2.5}]})") == nlohmann::json({{"a", {1, {{"b", 2.5}}}}}));
  // 100,000 levels parsed fine, but dump() of them overflowed the stack; 32 levels are the default limit.
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  CHECK_THROWS_WITH(parse_json(deep), "nests arrays or objects deeper than 32 levels");
  CHECK_THROWS_WITH(parse_json("{\"a\": " + std::string(40, '[') + std::string(40, ']') + "}"),
                    "nests arrays or objects deeper than 32 levels");
  const std::string limit = std::string(31, '[') + std::string(31, ']');
  CHECK(parse_json(limit).dump() == limit);
  CHECK_THROWS_WITH(parse_json(std::string(5, '['), 4), "nests arrays or objects deeper than 4 levels");
  CHECK_THROWS_AS(parse_json("[1e999]"), std::runtime_error);  // nlohmann's out_of_range, not a parse error
  CHECK_THROWS_WITH(parse_json("{\"a\": "), Catch::StartsWith("is not valid JSON: "));
  CHECK_THROWS_AS(parse_json(std::string("\"\xff\"")), std::runtime_error);
}

TEST_CASE("parse_json: the outermost object's or array's entries bounded before the value is built", "[io]") {
  CHECK(parse_json(R"({"a": 1, "b": {"c": 2, "d": 3, "e": 4}})", 32, 2).size() == 2);
  CHECK_THROWS_WITH(parse_json(R"({"a": 1, "b": 2, "c": {}})", 32, 2), "has 3 entries, more than the limit of 2");
  CHECK(parse_json("[[1, 2, 3], {}]", 32, 2).size() == 2);
  CHECK_THROWS_WITH(parse_json("[[1, 2, 3], {}, 5]", 32, 2), "has 3 entries, more than the limit of 2");
  CHECK(parse_json("7", 32, 0) == 7);
  // Nesting and syntax are still reported as such.
  CHECK_THROWS_WITH(parse_json("[1, [[2]]]", 2, 5), "nests arrays or objects deeper than 2 levels");
  CHECK_THROWS_WITH(parse_json("{\"a\": 1,", 32, 5), Catch::StartsWith("is not valid JSON: "));
}

TEST_CASE("read_json_file: a file's JSON, its errors prefixed by its path", "[io]") {
  tapegrad::testing::TempDir dir;
  const auto good = dir.path / "good.json", bad = dir.path / "bad.json", missing = dir.path / "missing.json";
  std::ofstream(good) << R"({"a": [1, 2]})";
  std::ofstream(bad) << "{\"a\": 1,";
  CHECK(tapegrad::io::read_json_file(good) == nlohmann::json({{"a", {1, 2}}}));
  CHECK_THROWS_WITH(tapegrad::io::read_json_file(missing), missing.string() + ": cannot open for reading");
  CHECK_THROWS_WITH(tapegrad::io::read_json_file(bad), Catch::StartsWith(bad.string() + ": is not valid JSON: "));
}
