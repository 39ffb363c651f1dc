// The three programs' command lines as a hostile or careless user meets them: every numeric flag read
// strictly and within the range examples/README.md documents for it, every error one short line
// naming the flag and the value, with exit code 2.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "examples/imdb/cli.hpp"
#include "examples/lm/cli.hpp"
#include "examples/translate/cli.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/examples/programs.hpp"
#include "tests/examples/tiny_runs.hpp"
#include "tests/helpers.hpp"

using tapegrad::testing::CliResult;

namespace {

struct Program {
  std::string name;
  std::function<CliResult(std::vector<std::string>, const std::string&)> run;
};

const std::vector<Program>& programs() {
  static const std::vector<Program> all = {
      {"train_imdb", tapegrad::testing::run_imdb},
      {"train_translate", tapegrad::testing::run_translate},
      {"train_lm", tapegrad::testing::run_lm},
  };
  return all;
}

// The subcommands a program's --help lists ("" for training itself).
std::vector<std::string> subcommands_of(const Program& p) {
  std::vector<std::string> subs = {""};
  std::istringstream help(p.run({"--help"}, "").out);
  bool listed = false;
  for (std::string line; std::getline(help, line);) {
    if (line == "Subcommands:") listed = true;
    std::smatch m;
    if (listed && std::regex_search(line, m, std::regex("^  ([a-z]+) "))) subs.push_back(m[1]);
  }
  return subs;
}

// The numeric flags of a program's or subcommand's --help, with their CLI11 type: INT, UINT or FLOAT.
std::map<std::string, std::string> numeric_flags(const Program& p, const std::string& sub) {
  std::vector<std::string> args;
  if (!sub.empty()) args.push_back(sub);
  args.push_back("--help");
  const std::string help = p.run(args, "").out;
  std::map<std::string, std::string> flags;
  const std::regex flag(" (--[a-z0-9-]+) (INT|UINT|FLOAT)\\b");
  for (std::sregex_iterator it(help.begin(), help.end(), flag), end; it != end; ++it) flags[(*it)[1]] = (*it)[2];
  return flags;
}

// A documented range: pieces joined by " or ", each a number or an interval such as "[0, 1)", "(0, 1]"
// or "[0, inf)". Integers can reach 2^64 - 1, so bounds stay exact as 128-bit integers.
struct Bound {
  bool infinite = false, open = false;
  __int128 integer = 0;
  double real = 0;
};
struct Piece {
  Bound lo, hi;
};

__int128 parse_int128(const std::string& text) {
  __int128 v = 0;
  const bool negative = !text.empty() && text[0] == '-';
  for (std::size_t i = negative ? 1 : 0; i < text.size(); ++i) v = v * 10 + (text[i] - '0');
  return negative ? -v : v;
}

std::string int128_text(__int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string digits;
  for (unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : v; u > 0; u /= 10) {
    digits.insert(digits.begin(), char('0' + int(u % 10)));
  }
  return (negative ? "-" : "") + digits;
}

Bound bound_of(const std::string& text, bool open) {
  Bound b;
  b.open = open;
  b.infinite = text == "inf";
  if (!b.infinite) {
    b.integer = text.find('.') == std::string::npos ? parse_int128(text) : 0;
    b.real = std::stod(text);
  }
  return b;
}

std::vector<Piece> parse_range(const std::string& text) {
  std::vector<Piece> pieces;
  const std::regex interval(R"(^([\[(])(-?[0-9.]+), (-?[0-9.]+|inf)([\])])$)");
  for (std::size_t begin = 0;;) {
    const std::size_t end = text.find(" or ", begin);
    const std::string part = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    std::smatch m;
    if (std::regex_match(part, m, interval)) {
      pieces.push_back({bound_of(m[2], m[1] == "("), bound_of(m[3], m[4] == ")")});
    } else {
      REQUIRE(std::regex_match(part, std::regex("^-?[0-9.]+$")));
      pieces.push_back({bound_of(part, false), bound_of(part, false)});
    }
    if (end == std::string::npos) break;
    begin = end + 4;
  }
  return pieces;
}

// Values just outside the documented range, as text: an integer one step past each closed end (the
// open end itself), a decimal 0.5 past, and inf and nan where the range is finite.
std::vector<std::string> outside(const std::vector<Piece>& pieces, bool integer) {
  const auto inside = [&](const std::string& text) {
    for (const Piece& p : pieces) {
      if (integer) {
        const __int128 v = parse_int128(text);
        if ((v > p.lo.integer || (!p.lo.open && v == p.lo.integer)) &&
            (p.hi.infinite || v < p.hi.integer || (!p.hi.open && v == p.hi.integer)))
          return true;
      } else {
        const double v = std::stod(text);
        if ((v > p.lo.real || (!p.lo.open && v == p.lo.real)) &&
            (p.hi.infinite || v < p.hi.real || (!p.hi.open && v == p.hi.real)))
          return true;
      }
    }
    return false;
  };
  std::vector<std::string> values;
  for (const Piece& p : pieces) {
    if (integer) {
      values.push_back(int128_text(p.lo.open ? p.lo.integer : p.lo.integer - 1));
      if (!p.hi.infinite) values.push_back(int128_text(p.hi.open ? p.hi.integer : p.hi.integer + 1));
    } else {
      values.push_back(fmt::format("{}", p.lo.open ? p.lo.real : p.lo.real - 0.5));
      values.push_back(p.hi.infinite ? "inf" : fmt::format("{}", p.hi.open ? p.hi.real : p.hi.real + 0.5));
    }
  }
  std::vector<std::string> kept;
  for (const auto& v : values) {
    if (!inside(v) && std::find(kept.begin(), kept.end(), v) == kept.end()) kept.push_back(v);
  }
  if (!integer) kept.push_back("nan");
  return kept;
}

// Values at the documented range's ends (an open end moved one step, or half way, inside), which a
// program must accept: a closed end as is, 1e300 for an unbounded one.
std::vector<std::string> at_the_ends(const std::vector<Piece>& pieces, bool integer) {
  std::vector<std::string> values;
  for (const Piece& p : pieces) {
    if (integer) {
      values.push_back(int128_text(p.lo.open ? p.lo.integer + 1 : p.lo.integer));
      if (!p.hi.infinite) values.push_back(int128_text(p.hi.open ? p.hi.integer - 1 : p.hi.integer));
    } else {
      const double middle = p.hi.infinite ? p.lo.real + 1 : (p.lo.real + p.hi.real) / 2;
      values.push_back(fmt::format("{}", p.lo.open ? middle : p.lo.real));
      values.push_back(p.hi.infinite ? "1e300" : fmt::format("{}", p.hi.open ? middle : p.hi.real));
    }
  }
  return values;
}

// The other settings a value at the end of its range needs, as the table's "also" column says: the
// heads must divide d_model, the embedding and positional tables must fit in half the memory,
// train_lm's warmup must be shorter than its steps, and its --hidden is --arch llama's.
std::vector<std::string> companions(const std::string& program, const std::string& flag, const std::string& value) {
  const std::string heads = program == "train_translate" ? "--nhead" : "--heads";
  const std::string length = program == "train_lm" ? "--context" : "--max-len";
  std::vector<std::string> small_tables;
  if (program != "train_translate") small_tables = {"--vocab-size", "3", length, program == "train_lm" ? "2" : "1"};
  std::vector<std::string> args;
  if (flag == heads) args = {"--d-model", value};
  if (flag == "--d-model") args = {heads, "1"};
  if (flag == "--ngram-dim")
    args = {"--d-model", "65536", heads, "1", "--ngram-init", "normal", "--ngram-buckets", "2"};
  if (flag == "--vocab-size" || flag == length || flag == "--ngram-buckets") return {"--d-model", "1", heads, "1"};
  if (program == "train_lm" && flag == "--warmup") args = {"--steps", "1000000000"};
  if (program == "train_lm" && flag == "--steps") args = {"--warmup", "0"};
  if (program == "train_lm" && flag == "--hidden") args = {"--arch", "llama"};
  if (flag == "--accumulate") args = {"--batch-size", value};
  // AdamW's decay factor 1 - lr * weight_decay must stay positive: each end of one with none of the other.
  if (flag == "--lr" && program != "train_translate") args = {"--weight-decay", "0"};
  if (flag == "--weight-decay") args = {"--lr", "0"};
  if (flag == "--crop-min") args = {"--crop-max", "1000000"};
  if (flag == "--crop-max") args = {"--crop-min", "1"};
  if (!args.empty() || flag == "--ff") args.insert(args.end(), small_tables.begin(), small_tables.end());
  return args;
}

// The arguments that put a flag of a program's subcommand on trial without any side effect: a run
// folder that does not exist, data that does not exist, an --out that is a file (train_translate
// trains without data); a value that passes would meet one of those and fail naming something else.
std::vector<std::string> trial(const std::string& program, const std::string& sub, const std::string& flag_value,
                               const std::filesystem::path& a_file) {
  const std::string no_run = "/nonexistent/run";
  if (sub.empty() && program == "train_translate") return {flag_value, "--out", a_file.string()};
  if (sub.empty()) return {flag_value, "--data", "/nonexistent/aclImdb", "--no-download", "--out", no_run};
  if (sub == "finetune") {
    // The flags that must agree with the one on trial take values that let it through.
    std::vector<std::string> args = {sub, "--from", no_run, "--text", no_run + "/text.txt", flag_value};
    const std::string flag = flag_value.substr(0, flag_value.find('='));
    if (flag == "--warmup") args.insert(args.end(), {"--steps", "1000000000"});
    if (flag == "--steps") args.insert(args.end(), {"--warmup", "0"});
    if (flag == "--accumulate") args.insert(args.end(), {"--batch-size", "1000000"});
    if (flag == "--weight-decay") args.insert(args.end(), {"--lr", "0"});
    return args;
  }
  const std::string run_flag = program == "train_translate" ? "--out" : "--run";
  std::vector<std::string> args = {sub, run_flag, no_run, flag_value};
  if (sub == "predict" || sub == "explain" || sub == "generate") args.push_back("good");
  if (sub == "translate") args.push_back("one");
  return args;
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// train_imdb's and train_lm's tiny model on the fixture's reviews, trained in milliseconds on one thread,
// without gradient clipping.
std::vector<std::string> tiny_text_args() {
  std::vector<std::string> args = tapegrad::testing::text_tiny_args();
  args.insert(args.end(),
              {"--layers", "1", "--valid-fraction", "0.34", "--warmup", "1", "--clip-norm", "0", "--threads", "1"});
  return args;
}

// A command line of `program` that trains a tiny run to its end in about a second, without --out.
std::vector<std::string> tiny_run_args(const std::string& program) {
  if (program == "train_translate") return tapegrad::testing::translate_tiny_args("4", "2");
  std::vector<std::string> args = tiny_text_args();
  if (program == "train_imdb") args.insert(args.end(), {"--max-len", "32", "--epochs", "2"});
  if (program == "train_lm") args.insert(args.end(), {"--context", "32", "--steps", "4", "--eval-every", "2"});
  return args;
}

// The command line that resumes the run in `run` of `program`.
std::vector<std::string> resume_args(const std::string& program, const std::string& run) {
  if (program == "train_translate") return {"--resume", "--out", run};
  std::vector<std::string> args = {"--resume", "--out", run, "--threads", "1"};
  args.insert(args.end(), {"--data", tapegrad::testing::tiny_reviews(), "--no-download"});
  return args;
}

// The folder of `program`'s tiny run, trained to its end into `out` (the test stops if that fails).
std::filesystem::path trained_tiny_run(const Program& p, const std::filesystem::path& out) {
  auto args = tiny_run_args(p.name);
  args.insert(args.end(), {"--out", out.string()});
  const CliResult trained = p.run(args, "");
  INFO(trained.err);
  REQUIRE(trained.code == 0);
  return out;
}

// check(p, tmp, good) for each program p, with its tiny run trained into good = tmp/good.
template <typename Check>
void with_each_trained_run(Check check) {
  for (const Program& p : programs()) {
    INFO(p.name);
    tapegrad::testing::TempDir tmp;
    check(p, tmp.path, trained_tiny_run(p, tmp.path / "good"));
  }
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

TEST_CASE("every numeric flag of every program has the range examples/README.md documents, enforced", "[cli]") {
  // The table: "| program [subcommand] | --flag | range | also |".
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> documented;
  std::ifstream readme(std::filesystem::path(TAPEGRAD_TEST_DATA_DIR) / "../../examples/README.md");
  REQUIRE(readme);
  const std::regex row(R"(^\| (train_[a-z]+)( [a-z]+)? \| (--[a-z0-9-]+) \| ([^|]+) \|)");
  for (std::string line; std::getline(readme, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    const std::string sub = m[2].matched ? m[2].str().substr(1) : "";
    std::string range = m[4];
    range.erase(range.find_last_not_of(' ') + 1);
    CHECK(documented[{m[1], sub}].emplace(m[3], range).second);
  }
  REQUIRE(documented.size() >= 3);

  tapegrad::testing::TempDir tmp;
  const std::filesystem::path a_file = tmp.path / "a_file";
  std::ofstream(a_file) << "not a folder";
  std::size_t probes = 0;
  for (const Program& p : programs()) {
    for (const std::string& sub : subcommands_of(p)) {
      INFO(p.name << " " << sub);
      const auto flags = numeric_flags(p, sub);
      const auto& ranges = documented[{p.name, sub}];
      // Listed exactly: a numeric flag without a documented range, or a row for a flag that is gone, fails.
      std::set<std::string> in_help, in_table;
      for (const auto& [flag, type] : flags) in_help.insert(flag);
      for (const auto& [flag, range] : ranges) in_table.insert(flag);
      CHECK(in_help == in_table);
      for (const auto& [flag, type] : flags) {
        if (!ranges.count(flag)) continue;
        for (const std::string& value : outside(parse_range(ranges.at(flag)), type != "FLOAT")) {
          INFO(flag << "=" << value << " (documented " << ranges.at(flag) << ")");
          const CliResult r = p.run(trial(p.name, sub, flag + "=" + value, a_file), "");
          CHECK(r.code == 2);
          CHECK(lines_of(r.err) == 1);
          CHECK_THAT(r.err, Catch::StartsWith(p.name + ": " + flag) && Catch::Contains(value));
          ++probes;
        }
        // The whole documented range is accepted: the run gets as far as the missing data or run folder.
        for (const std::string& value : at_the_ends(parse_range(ranges.at(flag)), type != "FLOAT")) {
          INFO(flag << "=" << value << " (documented " << ranges.at(flag) << ")");
          std::vector<std::string> args = trial(p.name, sub, flag + "=" + value, a_file);
          if (sub.empty()) {
            const auto more = companions(p.name, flag, value);
            args.insert(args.end(), more.begin(), more.end());
          }
          const CliResult r = p.run(args, "");
          CHECK(r.code == 2);
          CHECK_THAT(r.err, !Catch::Contains(flag + " ") && !Catch::Contains(flag + ":") &&
                                (Catch::Contains("does not exist") || Catch::Contains("has no") ||
                                 Catch::Contains("is a file, not a run folder")));
          ++probes;
        }
      }
    }
  }
  CHECK(probes > 300);
  // Nothing was written anywhere: the temporary folder holds only the file made above.
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("every program: a diverging run stops naming the step, keeps its last checkpoint and model", "[cli]") {
  // Learning rates far too large: the loss turns NaN a few steps after the first checkpoint. At which step
  // is up to the last bits of the products (other kernels, other CPUs), so the step is read from the
  // run's own log, a metrics.jsonl line every step (--log-every 1), and the error must name the first
  // step whose loss the log does not hold.
  struct Case {
    std::string program;
    std::vector<std::string> args;
    std::vector<std::string> use;  // a subcommand that loads the model (its run folder flag last)
  };
  const std::vector<std::string> tiny_text = tiny_text_args();
  // train_translate diverges with a huge learning rate and Adam without its second moment.
  auto translate_args = tapegrad::testing::translate_tiny_args("60", "3");
  translate_args.insert(translate_args.end(), {"--lr-factor", "1000", "--eps", "1", "--beta2", "0"});
  std::vector<Case> cases = {
      {"train_imdb",
       {"--max-len", "32", "--epochs", "30", "--lr", "1000", "--optimizer", "sgd"},
       {"predict", "good", "--run"}},
      // train_lm's AdamW cannot diverge in float by its flags alone (its steps are bounded by --lr, its decay
      // factor refused outside (0, 1)): bf16 products of weights grown by --lr 1000 overflow instead.
      {"train_lm",
       {"--context", "32", "--steps", "60", "--eval-every", "1", "--lr", "1000", "--weight-decay", "0", "--precision",
        "bf16"},
       {"generate", "--max-new-tokens", "5", "good", "--run"}},
      {"train_translate", translate_args, {"translate", "one", "--out"}},
  };
  for (Case& c : cases) {
    if (c.program != "train_translate") c.args.insert(c.args.begin(), tiny_text.begin(), tiny_text.end());
    if (c.program == "train_lm") *(std::find(c.args.begin(), c.args.end(), "--layers") + 1) = "4";
    c.args.insert(c.args.end(), {"--log-every", "1"});
  }
  // What metrics.jsonl says of a run stopped at step `stop`: steps 1 to stop - 1 each logged a finite loss,
  // in order, and nothing was logged from `stop` on. Returns the step of the last checkpoint (0: none):
  // the last validation, a second line of its step. `epoch` gets the epoch of the line of step stop - 1.
  const auto read_log = [](const std::filesystem::path& path, std::int64_t stop, double& epoch) {
    std::int64_t next = 1, checkpoint = 0;
    for (const nlohmann::json& line : tapegrad::train::read_metrics(path)) {
      INFO(line.dump());
      const std::int64_t step = line.at("step").get<std::int64_t>();
      // What a program logs before training (train_lm's baselines) is not a step's.
      if (step == 0) continue;
      // A loss of NaN or infinity would read as null.
      const nlohmann::json& loss = line.at("loss");
      CHECK((loss.is_number() && std::isfinite(loss.get<double>())));
      if (step == next) {
        epoch = line.at("epoch").get<double>();
        ++next;
      } else {
        CHECK(step == next - 1);
        checkpoint = step;
      }
    }
    CHECK(next == stop);
    return checkpoint;
  };
  for (const Case& c : cases) {
    INFO(c.program);
    const Program& p =
        *std::find_if(programs().begin(), programs().end(), [&](const Program& q) { return q.name == c.program; });
    tapegrad::testing::TempDir tmp;
    const std::string run = (tmp.path / "run").string();
    auto args = c.args;
    args.insert(args.end(), {"--out", run});
    const CliResult r = p.run(args, "");
    CHECK(r.code == 1);
    std::smatch named;
    // A run stops at its first non-finite training loss, at a validation whose logits are not finite
    // (train_imdb, whose validation fits weights to the logits), or at a validation whose model holds NaN
    // (a step's update overflowed), whichever comes first on this CPU's kernels; the extreme settings are
    // named.
    REQUIRE(std::regex_search(
        r.err, named,
        std::regex(c.program +
                   R"(: (?:(the training loss is (?:nan|inf|-inf) at step (\d+) \(epoch (\d+)\)); stopped )"
                   R"(without updating the model|(the validation logits are not finite at the validation )"
                   R"(after step (\d+) \(epoch (\d+)\)); stopped without saving|(after step (\d+) the model's )"
                   R"("[^"]+" holds -?nan at flat index \d+); stopped before validating and saving it), )"
                   R"((?:the last checkpoint \(step (\d+)\) is kept|there is no checkpoint yet); likely to )"
                   R"(blame: lr \d[^(]* \(above \d+(?:\.\d+)?\).*, gradient clipping off \((?:anomaly )"
                   R"(detection names the op that produced it|a smaller learning rate or clipping may help|)"
                   R"(a smaller learning rate, clipping or a larger eps may help)\)\n$)")));
    // --detect-anomaly names the op instead.
    auto anomaly = args;
    anomaly.back() = (tmp.path / "anomaly").string();
    anomaly.push_back("--detect-anomaly");
    const CliResult detected = p.run(anomaly, "");
    CHECK(detected.code == 1);
    const bool in_validation = named[4].matched, in_weights = named[7].matched;
    // Anomaly detection names the op that made a NaN; a validation's logits can be infinite instead.
    if (!in_validation || detected.err.find(named[4].str()) == std::string::npos)
      CHECK_THAT(detected.err, Catch::Contains(c.program + ": detect_anomaly: the "));
    const std::string stop = in_validation ? named[4] : in_weights ? named[7] : named[1];
    // The first step the log must not hold: the one whose loss was not finite, or the one after the
    // validation that failed or the step that left NaN weights (that step trained and was logged).
    const std::int64_t step = in_validation ? std::stoll(named[5]) + 1
                              : in_weights  ? std::stoll(named[8]) + 1
                                            : std::stoll(named[2]);
    const std::int64_t epoch = in_weights ? 0 : std::stoll(in_validation ? named[6] : named[3]);
    INFO(stop);
    // The named step is the first whose loss is not finite (or whose validation is not), in the epoch it
    // belongs to; the checkpoint kept is the last one before it (the setup diverges after the first).
    double last_epoch = 0;
    const std::int64_t checkpoint = read_log(std::filesystem::path(run) / "metrics.jsonl", step, last_epoch);
    if (in_weights) {
      // No epoch named: the message is about the model, between a step and its validation.
    } else if (in_validation) {
      CHECK(last_epoch > double(epoch - 1));
      CHECK(last_epoch <= double(epoch));
    } else if (step > 1) {
      CHECK(last_epoch >= double(epoch - 1));
      CHECK(last_epoch < double(epoch));
    }
    // The message names the checkpoint the log shows, or says there is none (bf16 or other kernels can
    // make the first validation diverge already).
    if (!named[9].matched) {
      CHECK(checkpoint == 0);
      CHECK_FALSE(std::filesystem::exists(std::filesystem::path(run) / "last.ckpt.safetensors"));
      continue;
    }
    CHECK(std::stoll(named[9]) == checkpoint);
    REQUIRE(checkpoint > 0);
    CHECK(checkpoint < (in_validation || in_weights ? step - 1 : step));
    // The best model on disk is from that checkpoint's validation or an earlier one.
    const auto model = tapegrad::io::safetensors::File(run + "/model.safetensors").metadata();
    CHECK(std::stoll(model.at("step")) <= checkpoint);
    // The checkpoint loads (the run resumes from it, and diverges again the same way), so does the model.
    auto resume = args;
    resume.push_back("--resume");
    if (c.program == "train_translate") resume = {"--resume", "--out", run};
    const CliResult resumed = p.run(resume, "");
    CHECK(resumed.code == 1);
    CHECK_THAT(resumed.err,
               Catch::Contains(fmt::format("resuming {}/last.ckpt.safetensors at step {} ", run, checkpoint)) &&
                   Catch::Contains(stop));
    CHECK(read_log(std::filesystem::path(run) / "metrics.jsonl", step, last_epoch) == checkpoint);
    auto use = c.use;
    use.push_back(run);
    CHECK(p.run(use, "").code == 0);
  }
}

TEST_CASE("every program: --resume of a finished run checks every file it uses, and refuses a damaged one by name",
          "[cli]") {
  // The run trains no further, so the program went straight to the scores stored with its best model: a
  // model with one flipped byte exited 0 with them, and only a later use of the run found the damage.
  with_each_trained_run([](const Program& p, const std::filesystem::path& tmp, const std::filesystem::path& good) {
    REQUIRE(p.run(resume_args(p.name, good.string()), "").code == 0);
    std::vector<std::string> files = {"model.safetensors", "last.ckpt.safetensors", "config.json"};
    if (std::filesystem::exists(good / "vocab.txt")) files.push_back("vocab.txt");
    for (const std::string& name : files) {
      INFO(name);
      const std::filesystem::path run = tmp / ("damaged-" + name);
      std::filesystem::copy(good, run);
      // A byte of the values, not of the layout that parsing would refuse anyway: the last of a
      // safetensors file, the last digit of config.json, a letter of the vocabulary's last token.
      std::fstream file(run / name, std::ios::in | std::ios::out | std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(file)), {});
      std::size_t at = bytes.size() - 1;
      if (name == "config.json") at = bytes.find_last_of("0123456789");
      if (name == "vocab.txt") at = bytes.find_last_not_of("\n");
      REQUIRE(at < bytes.size());
      file.seekp(static_cast<std::streamoff>(at));
      file.put(static_cast<char>(bytes[at] ^ 1));
      file.close();
      const CliResult r = p.run(resume_args(p.name, run.string()), "");
      CHECK(r.code != 0);
      CHECK_THAT(r.err, Catch::Contains((run / name).string()));
      CHECK_THAT(r.out, !Catch::Contains("validation") && !Catch::Contains("test"));
    }
  });
}

TEST_CASE("every program: report warns on a damaged metrics.jsonl by line, and fails when a trained run has none left",
          "[cli]") {
  // A truncated log said "no data yet" with exit 0, and a garbage line was skipped without a word.
  with_each_trained_run([](const Program& p, const std::filesystem::path& tmp, const std::filesystem::path& good) {
    const auto report = [&](const std::filesystem::path& run) {
      return p.run({"report", p.name == "train_translate" ? "--out" : "--run", run.string()}, "");
    };
    const CliResult whole = report(good);
    CHECK(whole.code == 0);
    CHECK(whole.err.empty());
    std::ifstream in(good / "metrics.jsonl");
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    const std::size_t first_end = log.find('\n');
    REQUIRE(first_end != std::string::npos);

    // A garbage line between the first two: named by its number, and the rest still drawn.
    const std::filesystem::path garbage = tmp / "garbage";
    std::filesystem::copy(good, garbage);
    std::ofstream(garbage / "metrics.jsonl") << log.substr(0, first_end + 1) << "{\"step\": 3, \"lo\n"
                                             << log.substr(first_end + 1);
    const CliResult warned = report(garbage);
    CHECK(warned.code == 0);
    CHECK_THAT(warned.err,
               Catch::StartsWith(fmt::format("warning: {} line 2: not JSON (", (garbage / "metrics.jsonl").string())));
    CHECK_THAT(warned.out, Catch::StartsWith("report: "));

    // Cut short inside its first line, or emptied: nothing is left of a run that trained.
    for (const std::string& kept : {log.substr(0, first_end / 2), std::string()}) {
      const std::filesystem::path cut = tmp / ("cut" + std::to_string(kept.size()));
      std::filesystem::copy(good, cut);
      std::ofstream(cut / "metrics.jsonl", std::ios::trunc) << kept;
      const CliResult failed = report(cut);
      CHECK(failed.code == 1);
      CHECK_THAT(failed.err, Catch::EndsWith(fmt::format(
                                 "{}: {}: no readable line, yet the run has trained ({} exists): its log is lost or "
                                 "damaged, so there is nothing to report\n",
                                 p.name, (cut / "metrics.jsonl").string(), (cut / "last.ckpt.safetensors").string())));
      CHECK(failed.out.empty());
    }

    // A run still starting (its config written, nothing trained yet) has no data yet, which is no error.
    const std::filesystem::path starting = tmp / "starting";
    std::filesystem::create_directory(starting);
    std::filesystem::copy(good / "config.json", starting / "config.json");
    const CliResult early = report(starting);
    CHECK(early.code == 0);
    CHECK(early.err.empty());
    std::ifstream page(starting / "report.html");
    CHECK_THAT(std::string((std::istreambuf_iterator<char>(page)), {}), Catch::Contains("no data yet"));
  });
}

TEST_CASE("every program: the temporary files a killed save left are gone once the run starts or resumes", "[cli]") {
  // A kill -9 in the middle of write_file_atomically leaves "<file>.tmp.<pid>.<n>", as large as the file;
  // the next save of the same file removed it, but config.json and vocab.txt are never saved again.
  with_each_trained_run([](const Program& p, const std::filesystem::path&, const std::filesystem::path& run) {
    const auto plant = [&] {
      const pid_t dead = tapegrad::testing::exited_pid();
      for (const char* name : {"config.json", "vocab.txt", "last.ckpt.safetensors", "report.html"}) {
        std::ofstream(run / fmt::format("{}.tmp.{}.{}", name, dead, 7)) << "cut short";
      }
    };
    const auto temporaries = [&] {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(run)) {
        const std::string name = entry.path().filename().string();
        if (name.find(".tmp.") != std::string::npos) found.push_back(name);
      }
      return found;
    };
    plant();
    const CliResult resumed = p.run(resume_args(p.name, run.string()), "");
    CHECK(resumed.code == 0);
    CHECK(temporaries().empty());
    CHECK_THAT(resumed.err, Catch::Contains(fmt::format("removed {}/config.json.tmp.", run.string())) &&
                                Catch::Contains(", left by a save that was killed"));
    // The same when a new run starts over it.
    plant();
    auto again = tiny_run_args(p.name);
    again.insert(again.end(), {"--out", run.string(), "--overwrite"});
    CHECK(p.run(again, "").code == 0);
    CHECK(temporaries().empty());
  });
}

TEST_CASE("train_lm --overwrite: the previous run is replaced only once the new one has its first checkpoint",
          "[cli]") {
  // It was deleted at the start, so a new run that failed or was stopped early left nothing at all.
  const Program& lm = programs().back();
  REQUIRE(lm.name == "train_lm");
  tapegrad::testing::TempDir tmp;
  const std::filesystem::path run = tmp.path / "run";
  auto args = tiny_run_args("train_lm");
  args.insert(args.end(), {"--out", run.string()});
  REQUIRE(lm.run(args, "").code == 0);
  const auto read = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  const std::vector<std::string> kept = {"model.safetensors", "last.ckpt.safetensors", "config.json", "vocab.txt"};
  std::map<std::string, std::string> before;
  for (const auto& name : kept) before[name] = read(run / name);
  const auto unchanged = [&] {
    for (const auto& name : kept) {
      INFO(name);
      CHECK(read(run / name) == before[name]);
    }
    CHECK_FALSE(std::filesystem::exists(run / "previous-run"));
  };

  // A new run (other settings, no checkpoint for a long while) started with --overwrite, as a process,
  // and signalled once it has moved the previous run aside.
  std::string command = std::string("'") + TRAIN_LM_PROGRAM + "'";
  auto long_run = tiny_text_args();
  long_run.insert(long_run.end(), {"--context", "16", "--steps", "1000000", "--eval-every", "1000000", "--overwrite",
                                   "--out", run.string()});
  for (const auto& a : long_run) command += " '" + a + "'";
  const auto signalled = [&](const std::string& signal) {
    // An error file each: the wait for the line must not read an earlier process's.
    const std::string err = (tmp.path / ("err." + signal)).string();
    return tapegrad::testing::shell(fmt::format(
        "{} 2> '{}' & pid=$!; until grep -qs 'moved to' '{}'; do kill -0 $pid 2> /dev/null || exit 99; sleep 0.02; "
        "done; kill -{} $pid; wait $pid; echo $?",
        command, err, err, signal));
  };

  // Ctrl-C before the first checkpoint: the previous run is back, byte for byte.
  const auto [code, status] = signalled("INT");
  CHECK(code == 0);
  CHECK(status == "130\n");
  CHECK_THAT(read(tmp.path / "err.INT"),
             Catch::Contains(fmt::format("--overwrite: this run stopped before its first checkpoint, so the "
                                         "previous run's config.json, metrics.jsonl, "
                                         "last.ckpt.safetensors, model.safetensors, vocab.txt are back in {}",
                                         run.string())));
  unchanged();

  // kill -9 there: the next start puts it back (here a --resume, which then finds the finished run).
  const auto [killed_code, killed_status] = signalled("KILL");
  CHECK(killed_code == 0);
  CHECK(killed_status == "137\n");
  CHECK(std::filesystem::exists(run / "previous-run" / "model.safetensors"));
  const CliResult resumed = lm.run(resume_args("train_lm", run.string()), "");
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.err, Catch::Contains("put back the previous run's config.json, metrics.jsonl, "
                                          "last.ckpt.safetensors, model.safetensors, vocab.txt"));
  unchanged();

  // A new run that reaches its first checkpoint deletes the previous one then.
  auto replace = args;
  replace.insert(replace.end(), {"--overwrite", "--seed", "5"});
  const CliResult replaced = lm.run(replace, "");
  CHECK(replaced.code == 0);
  CHECK_THAT(replaced.err, Catch::Contains(fmt::format(
                               "--overwrite: deleted the previous run ({}) now that this run has a checkpoint",
                               (run / "previous-run").string())));
  CHECK_FALSE(std::filesystem::exists(run / "previous-run"));
  CHECK(read(run / "model.safetensors") != before["model.safetensors"]);
}

TEST_CASE("every program: --resume with a config.json nested 100,000 deep is an error naming the file", "[cli]") {
  // It parsed, and the error message quoting the bad value (dump()) overflowed the stack.
  for (const Program& p : programs()) {
    INFO(p.name);
    tapegrad::testing::TempDir tmp;
    std::ofstream(tmp.path / "config.json")
        << "{\"seed\": " << std::string(100'000, '[') << std::string(100'000, ']') << "}";
    std::ofstream(tmp.path / "last.ckpt.safetensors") << "never read";
    const CliResult r = p.run({"--resume", "--out", tmp.path.string()}, "");
    CHECK(r.code == 1);
    CHECK(r.err == fmt::format("{}: {}: nests arrays or objects deeper than 32 levels\n", p.name,
                               (tmp.path / "config.json").string()));
  }
}
