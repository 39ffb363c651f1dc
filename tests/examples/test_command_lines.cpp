// The three programs' command lines as a hostile or careless user meets them: every numeric flag read
// strictly, every error one short line naming the flag and the value, with exit code 2.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "examples/imdb/cli.hpp"
#include "examples/lm/cli.hpp"
#include "examples/translate/cli.hpp"
#include "tests/examples/cli_harness.hpp"

using tapegrad::testing::CliResult;

namespace {

struct Program {
  std::string name;
  std::function<CliResult(std::vector<std::string>, const std::string&)> run;
};

const std::vector<Program>& programs() {
  static const std::vector<Program> all = {
      {"train_imdb",
       [](std::vector<std::string> args, const std::string& input) {
         return tapegrad::testing::run_cli_in_process([](auto&&... a) { return imdb::run_cli(a...); }, "train_imdb",
                                                      std::move(args), input);
       }},
      {"train_translate",
       [](std::vector<std::string> args, const std::string& input) {
         return tapegrad::testing::run_cli_in_process(translate::run_cli, "train_translate", std::move(args), input);
       }},
      {"train_lm",
       [](std::vector<std::string> args, const std::string& input) {
         return tapegrad::testing::run_cli_in_process(lm::run_cli, "train_lm", std::move(args), input);
       }},
  };
  return all;
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("every program: integers beyond 64 bits, negative counts and numbers beyond a double are refused", "[cli]") {
  // CLI11 alone clamped 99999999999999999999 to 2^63 - 1 (a seed nobody gave), read "-1" into an
  // unsigned count as 2^64 - 1, "010" as octal 8, and cast 1e999 from long double to double.
  for (const Program& p : programs()) {
    INFO(p.name);
    const std::string lr = p.name == "train_translate" ? "--lr-factor" : "--lr";
    const std::string seed_type = p.name == "train_translate" ? "64-bit unsigned integer" : "64-bit integer";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--seed", "99999999999999999999"}, "--seed: 99999999999999999999 is outside the range of a " + seed_type},
        {{"--seed", "0x10"}, "--seed: 0x10 is not a decimal integer"},
        {{lr, "1e999"}, lr + ": 1e999 is outside the range of a double"},
        {{lr, "0.1x"}, lr + ": 0.1x is not a number"},
    };
    for (const auto& [args, expected] : cases) {
      INFO(args.front() << " " << args.back());
      const CliResult r = p.run(args, "");
      CHECK(r.code == 2);
      CHECK(r.err == fmt::format("{}: {} (see {} --help)\n", p.name, expected, p.name));
      CHECK(r.out.empty());
    }
  }
  const CliResult r = programs()[1].run({"--batch-size=-1"}, "");
  CHECK(r.err == "train_translate: --batch-size: -1 must not be negative (see train_translate --help)\n");
}

TEST_CASE("every program: an error quoting a huge argument stays one short line", "[cli]") {
  const std::string huge(100'000, 'a');
  for (const Program& p : programs()) {
    INFO(p.name);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--" + huge}, {"--out", "/nonexistent/" + huge, "--resume"}}) {
      const CliResult r = p.run(args, "");
      CHECK(r.code != 0);
      CHECK(lines_of(r.err) == 1);
      CHECK(r.err.size() < 1200);
      CHECK_THAT(r.err, Catch::Contains("... (1000"));
    }
  }
}
