// The programs' flags as declared once (examples/common/flags.hpp): config.json read strictly (an
// unknown or missing key, a wrong type, a value out of range, a run of another version: each an error
// naming the key and the value), and the READMEs' tables generated from the declarations.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"
#include "examples/imdb/config.hpp"
#include "examples/lm/config.hpp"
#include "examples/lm/finetune_config.hpp"
#include "examples/translate/config.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What the tests need of one program: its table, config.json's default and its reader.
struct Program {
  std::string name, folder;
  const examples::FlagTable& table;
  json defaults;
  std::function<void(const json&)> read;  // throws std::runtime_error
  std::string markdown;
};

std::vector<Program> programs() {
  return {
      {"train_imdb", "imdb", imdb::flags(), imdb::to_json(imdb::Config()),
       [](const json& j) { imdb::config_from_json(j); }, imdb::flags().markdown_table()},
      {"train_lm", "lm", lm::flags(), lm::to_json(lm::Config()), [](const json& j) { lm::config_from_json(j); },
       lm::flags_markdown()},
      {"train_translate", "translate", translate::flags(), translate::to_json(translate::Config()),
       [](const json& j) { translate::config_from_json(j); }, translate::flags().markdown_table()},
  };
}

// A flags table a README documents: the declaration, the README's folder under examples/ and the table
// generated from it; a subcommand with a table of its own (train_lm finetune) is one too.
struct Documented {
  const examples::FlagTable& table;
  std::string folder, markdown;
};

std::vector<Documented> documented_tables() {
  std::vector<Documented> tables;
  for (const Program& p : programs()) tables.push_back({p.table, p.folder, p.markdown});
  tables.push_back({lm::finetune_flags(), "lm", lm::finetune_flags().markdown_table()});
  return tables;
}

std::string error_of(const Program& p, const json& j) {
  try {
    p.read(j);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  REQUIRE(file);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

const fs::path kExamples = fs::path(TAPEGRAD_TEST_DATA_DIR) / "../../examples";
// A table's markers, the first naming its program, so that one README may hold several.
std::string begin_marker(const examples::FlagTable& table) {
  return fmt::format("<!-- flags of {}: generated from its declaration; tests/examples/test_flags.cpp -->\n",
                     table.program());
}
constexpr const char* kEnd = "<!-- end of flags -->\n";

}  // namespace

TEST_CASE("every program: config.json is read strictly, each error naming the key and the value", "[flags]") {
  for (const Program& p : programs()) {
    INFO(p.name);
    CHECK(error_of(p, p.defaults) == "(accepted)");
    // The first saved integer and string settings of the table, to spoil.
    const examples::Flag *integer = nullptr, *text = nullptr;
    for (const examples::Flag& f : p.table.flags()) {
      if (f.key.empty() || f.name.empty()) continue;
      if (!integer && f.integral && f.range && f.range->lo == 1 && !f.range->or_zero) integer = &f;
      if (!text && !f.choices.empty()) text = &f;
    }
    REQUIRE(integer);
    REQUIRE(text);
    json j = p.defaults;
    j["lyers"] = 2;
    CHECK(error_of(p, j) == "unknown key \"lyers\"");
    j = p.defaults;
    j.erase(integer->key);
    CHECK(error_of(p, j) == fmt::format("missing key \"{}\"", integer->key));
    j = p.defaults;
    j[integer->key] = 4.5;
    CHECK(error_of(p, j) == fmt::format("\"{}\" must be an integer, got number 4.5", integer->key));
    j[integer->key] = "2";
    CHECK(error_of(p, j) == fmt::format("\"{}\" must be an integer, got string \"2\"", integer->key));
    j[integer->key] = 0;
    CHECK(error_of(p, j) == fmt::format("\"{}\" 0 must be positive", integer->key));
    j[integer->key] = 1'000'000'000'000;
    CHECK(error_of(p, j) == fmt::format("\"{}\" 1000000000000 is above the limit of {}", integer->key,
                                        static_cast<std::int64_t>(integer->range->hi)));
    j = p.defaults;
    j[text->key] = "sideways";
    std::string choices;
    for (const auto& c : text->choices) choices += (choices.empty() ? "" : "|") + c;
    CHECK(error_of(p, j) == fmt::format("\"{}\" sideways is not one of {}", text->key, choices));
    j = p.defaults;
    j["dropout"] = 1.5;
    CHECK(error_of(p, j) == "\"dropout\" 1.5 is outside [0, 1)");
    CHECK(error_of(p, json::array({1})) == "a JSON array, not an object");
  }
}

TEST_CASE("every program: a config.json of another version, or of none, is refused naming both versions", "[flags]") {
  for (const Program& p : programs()) {
    INFO(p.name);
    CHECK(p.defaults.at("version") == 3);
    json j = p.defaults;
    j.erase("version");
    CHECK(error_of(p, j) == fmt::format("no \"version\": a run of an older {} (version 1), which this one does not "
                                        "read (it reads version 3); train it anew",
                                        p.name));
    j["version"] = 2;
    CHECK(error_of(p, j) == fmt::format("\"version\" 2: a run of an older {}, which this one does not read (it "
                                        "reads version 3); train it anew",
                                        p.name));
    j["version"] = 4;
    CHECK(error_of(p, j) ==
          fmt::format("\"version\" 4: a run of a newer {}, which this one does not read (it reads version 3)", p.name));
    j["version"] = "3";
    CHECK_THAT(error_of(p, j), Catch::StartsWith("\"version\" \"3\": a run of an older"));
  }
}

TEST_CASE("every program's README: its flags tables are the ones the declarations generate", "[flags]") {
  // TAPEGRAD_WRITE_FLAG_TABLES=1 rewrites the tables in place (after a flag changed), for review with git diff.
  const bool write = std::getenv("TAPEGRAD_WRITE_FLAG_TABLES") != nullptr;
  for (const Documented& d : documented_tables()) {
    INFO(d.table.program());
    const fs::path readme = kExamples / d.folder / "README.md";
    std::string text = read_text(readme);
    const std::string begin_text = begin_marker(d.table);
    const auto begin = text.find(begin_text);
    REQUIRE(begin != std::string::npos);
    CHECK(text.find(begin_text, begin + 1) == std::string::npos);
    const std::size_t from = begin + begin_text.size();
    const auto end = text.find(kEnd, from);
    REQUIRE(end != std::string::npos);
    const std::string documented = text.substr(from, end - from);
    if (write && documented != d.markdown) {
      text.replace(from, end - from, d.markdown);
      std::ofstream(readme, std::ios::binary) << text;
      continue;
    }
    INFO("generated:\n" << d.markdown);
    CHECK(documented == d.markdown);
  }
}

TEST_CASE("every program: each declared range is the one examples/README.md documents", "[flags]") {
  std::map<std::pair<std::string, std::string>, std::string> documented;
  const std::regex row(R"(^\| (train_[a-z]+(?: [a-z]+)?) \| (--[a-z0-9-]+) \| ([^|]+?) \|)");
  std::istringstream readme(read_text(kExamples / "README.md"));
  for (std::string line; std::getline(readme, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[{m[1], m[2]}] = m[3];
  }
  for (const Documented& d : documented_tables()) {
    INFO(d.table.program());
    std::size_t ranges = 0;
    for (const examples::Flag& f : d.table.flags()) {
      if (f.name.empty() || !f.range) continue;
      INFO(f.name);
      CHECK(documented[{d.table.program(), f.name}] == f.range->text());
      ++ranges;
    }
    CHECK(ranges > 15);
  }
}

TEST_CASE("a range's text and bounds", "[flags]") {
  CHECK(examples::closed(1, 256).text() == "[1, 256]");
  CHECK(examples::below(0, 1).text() == "[0, 1)");
  CHECK(examples::between(0, 1).text() == "(0, 1)");
  CHECK(examples::at_least(0).text() == "[0, inf)");
  CHECK(examples::above(0).text() == "(0, inf)");
  CHECK(examples::zero_or(2, 100).text() == "0 or [2, 100]");
  CHECK(examples::closed(0, 18446744073709551615.0L).text() == "[0, 18446744073709551615]");
  CHECK(examples::closed(-10, 10).text() == "[-10, 10]");
  CHECK(examples::zero_or(2, 100).contains(0));
  CHECK_FALSE(examples::zero_or(2, 100).contains(1));
  CHECK_FALSE(examples::below(0, 1).contains(1));
  CHECK_FALSE(examples::at_least(0).contains(std::nanl("")));
  CHECK(examples::at_least(0).contains(1e300L));
}
