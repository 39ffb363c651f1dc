// train_imdb's settings as a hostile or careless user meets them: config.json read strictly, every
// numeric flag bounded.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "examples/imdb/config.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/helpers.hpp"

using imdb::Config;
using nlohmann::json;

namespace {

std::string error_of(const json& j) {
  try {
    imdb::config_from_json(j);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string problem_of(const Config& c) { return imdb::validate(c).value_or("(valid)"); }

// Runs train_imdb with `args` (shell syntax), returning its exit code and its stderr; its stdout.
std::pair<int, std::string> train_imdb_stderr(const std::string& args) {
  return tapegrad::testing::shell(fmt::format("'{}' {} 2>&1 >/dev/null", TRAIN_IMDB_PROGRAM, args));
}
std::pair<int, std::string> train_imdb_stdout(const std::string& args) {
  return tapegrad::testing::shell(fmt::format("'{}' {} 2>/dev/null", TRAIN_IMDB_PROGRAM, args));
}

}  // namespace

TEST_CASE("config.json: unknown keys, wrong types and non-integers are errors naming the key", "[imdb][config]") {
  const json saved = imdb::to_json(Config());
  const auto with = [&](const char* key, const json& value) {
    json j = saved;
    j[key] = value;
    return j;
  };
  CHECK(imdb::config_from_json(saved).heads == 4);
  CHECK(error_of(with("lyers", 2)) == "unknown key \"lyers\"");
  CHECK(error_of(with("heads", 4.9)) == "\"heads\" must be an integer, got number 4.9");
  CHECK(error_of(with("heads", "2")) == "\"heads\" must be an integer, got string \"2\"");
  CHECK(error_of(with("heads", true)) == "\"heads\" must be an integer, got boolean true");
  CHECK(error_of(with("seed", 18446744073709551615ull)) ==
        "\"seed\" must be an integer at most 9223372036854775807, got number 18446744073709551615");
  CHECK(error_of(with("lr", "0.1")) == "\"lr\" must be a number, got string \"0.1\"");
  CHECK(error_of(with("pooling", 1)) == "\"pooling\" must be a string, got number 1");
  CHECK(error_of(with("ngram-buckets", 1)) == "\"ngram-buckets\" 1 is outside 0 or [2, 100000000]");
  CHECK(error_of(json::array({1, 2})) == "a JSON array, not an object");
  // The message is one short line even for a huge value or key.
  CHECK(error_of(with("data", json::array({std::string(1 << 20, 'x')}))).size() < 200);
  CHECK(error_of(with(std::string(1 << 20, 'k').c_str(), 1)).size() < 200);
  // An integer is accepted for a number (JSON has one number type), and the values round-trip.
  json edited = with("lr", 1);
  edited["heads"] = 2;
  const Config c = imdb::config_from_json(edited);
  CHECK(c.lr == 1.0);
  CHECK(c.heads == 2);
}

TEST_CASE("validate: every numeric setting has an upper bound where memory or time would explode", "[imdb][config]") {
  Config c;
  CHECK(problem_of(c) == "(valid)");
  c.max_len = 100'000'000;
  CHECK(problem_of(c) == "--max-len 100000000 is above the limit of 1000000");
  c = Config();
  c.layers = 1'000'000;
  CHECK(problem_of(c) == "--layers 1000000 is above the limit of 256");
  c = Config();
  c.threads = 4294967298;
  CHECK(problem_of(c) == "--threads 4294967298 is above the limit of 1024");
  c = Config();
  c.lr = 1e300;
  CHECK(problem_of(c) == "--lr 1e+300 is outside [0, 1000]");
  c = Config();
  c.lr = std::numeric_limits<double>::quiet_NaN();
  CHECK(problem_of(c) == "--lr nan is outside [0, 1000]");
  c = Config();
  c.vocab_size = 10'000'000;
  c.d_model = 65'536;
  c.heads = 1;
  CHECK_THAT(problem_of(c), Catch::StartsWith("--vocab-size 10000000 and --max-len 1024 at --d-model 65536 need "
                                              "10486.8 GB for their tables, more than half of this machine's"));
}

TEST_CASE("usage errors for predict without input and evaluate of a split the run lacks and huge thread counts",
          "[imdb][config]") {
  tapegrad::testing::TempDir tmp;
  const std::string run = (tmp.path / "run").string();
  const auto [trained, log] =
      train_imdb_stderr(fmt::format("--data '{}/aclImdb_small' --no-download --d-model 8 --heads 2 --layers 1 --ff 16 "
                                    "--vocab-size 50 --ngram-buckets 64 --wide-buckets 97 --max-len 32 "
                                    "--epochs 1 --batch-size 2 --valid-fraction 0 --warmup 1 --threads 1 --out '{}'",
                                    TAPEGRAD_TEST_DATA_DIR, run));
  REQUIRE(trained == 0);
  CHECK(train_imdb_stderr(fmt::format("predict --run '{}' < /dev/null", run)) ==
        std::pair<int, std::string>{
            2, "train_imdb: nothing to predict: give reviews as arguments or as lines on stdin\n"});
  const auto [code, err] =
      train_imdb_stderr(fmt::format("evaluate --run '{}' --split valid --data '{}/aclImdb_small' "
                                    "--no-download",
                                    run, TAPEGRAD_TEST_DATA_DIR));
  CHECK(code == 2);
  CHECK_THAT(
      err, Catch::EndsWith(fmt::format(
               "train_imdb: --split valid: the run {} has no validation reviews (its --valid-fraction is 0)\n", run)));
  CHECK(train_imdb_stderr(fmt::format("predict --run '{}' --threads 4294967298 good", run)) ==
        std::pair<int, std::string>{2, "train_imdb: --threads 4294967298 is above the limit of 1024\n"});
  // A review without a token got the model's P(positive) of nothing (0.4999), as if it were an answer.
  std::ofstream(tmp.path / "reviews.txt") << "good film\n \nbad film\n";
  CHECK(train_imdb_stderr(fmt::format("predict --run '{}' < '{}'", run, (tmp.path / "reviews.txt").string())) ==
        std::pair<int, std::string>{2, "train_imdb: line 2 of stdin has no tokens: nothing to predict from\n"});
  // Blank lines at the end of the file are its end: one probability per review above them.
  std::ofstream(tmp.path / "trailing.txt") << "good film\nbad film\n\n \n";
  const auto [trailing_code, trailing_out] =
      train_imdb_stdout(fmt::format("predict --run '{}' < '{}'", run, (tmp.path / "trailing.txt").string()));
  CHECK(trailing_code == 0);
  CHECK(std::count(trailing_out.begin(), trailing_out.end(), '\n') == 2);
  std::ofstream(tmp.path / "blank.txt") << "\n\n";
  CHECK(train_imdb_stderr(fmt::format("predict --run '{}' < '{}'", run, (tmp.path / "blank.txt").string())) ==
        std::pair<int, std::string>{
            2, "train_imdb: nothing to predict: give reviews as arguments or as lines on stdin\n"});
  CHECK(train_imdb_stderr(fmt::format("predict --run '{}' good ' '", run)) ==
        std::pair<int, std::string>{2, "train_imdb: review 2 has no tokens: nothing to predict from\n"});
  // evaluate's --batch-size is bounded like training's, and checked before the run folder is read.
  CHECK(train_imdb_stderr("evaluate --run /nonexistent --batch-size 4294967298") ==
        std::pair<int, std::string>{2, "train_imdb: --batch-size 4294967298 is above the limit of 1000000\n"});
}

TEST_CASE("training on reviews that hold no tokens is an error, not a run at chance", "[imdb][config]") {
  tapegrad::testing::TempDir tmp;
  for (const char* file : {"train/neg/0_1.txt", "train/pos/0_9.txt", "test/neg/0_2.txt", "test/pos/0_8.txt"}) {
    std::filesystem::create_directories((tmp.path / "data" / file).parent_path());
    std::ofstream(tmp.path / "data" / file) << (file[1] == 'r' ? " \n\t" : "fine");
  }
  const auto [code, err] =
      train_imdb_stderr(fmt::format("--data '{}' --no-download --valid-fraction 0 --epochs 1 --warmup 0 --out '{}'",
                                    (tmp.path / "data").string(), (tmp.path / "run").string()));
  CHECK(code == 1);
  CHECK_THAT(err, Catch::EndsWith("the 2 training reviews hold no tokens (all empty or whitespace)\n"));
}
