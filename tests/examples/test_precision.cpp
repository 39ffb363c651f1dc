// --precision in every program: a tiny run of each in bf16 trains, and says so (the machine, the
// precision, and the notice where bf16 has no native kernels); config.json records what was asked and
// what it resolved to; auto resolves as tapegrad::has_native_bfloat16() says; a bad value is refused
// naming the flag; --resume keeps the precision a run started in and refuses another one. CTest runs
// these also under ONEDNN_MAX_CPU_ISA=AVX2 (tests/CMakeLists.txt), where bf16 has no native kernels.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/precision.hpp"
#include "examples/imdb/cli.hpp"
#include "examples/imdb/config.hpp"
#include "examples/imdb/train.hpp"
#include "examples/lm/cli.hpp"
#include "examples/lm/config.hpp"
#include "examples/lm/train.hpp"
#include "examples/translate/cli.hpp"
#include "examples/translate/config.hpp"
#include "examples/translate/training.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/machine.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/run_directory.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/examples/programs.hpp"
#include "tests/examples/tiny_runs.hpp"
#include "tests/helpers.hpp"

namespace fs = std::filesystem;
using tapegrad::testing::CliResult;
using tapegrad::testing::resume_conflict;
using tapegrad::testing::TempDir;

namespace {

struct Program {
  std::string name;
  std::function<CliResult(std::vector<std::string>)> run;  // in-process
  std::string executable;
  std::string resolved_key;  // of config.json
  // A run that trains in a fraction of a second, its loss falling, into `out`.
  std::function<std::vector<std::string>(const fs::path& out)> tiny;
  // A subcommand that runs a finished run's model, its run folder flag last.
  std::vector<std::string> use;
  // Trains the tiny run's settings (auto precision) in-process, stopped after step `stop` with a
  // checkpoint of an earlier step, which --resume continues.
  std::function<void(const fs::path& out)> interrupted;
};

std::vector<std::string> with_out(std::vector<std::string> args, const fs::path& out) {
  args.insert(args.end(), {"--log-every", "1", "--out", out.string()});
  return args;
}

// Trains config in-process into out with train (a program's train(), called as run_cli calls it),
// stopped after step `stop`.
template <typename Config, typename Train>
void train_stopped(Config config, const fs::path& out, std::int64_t stop, Train train) {
  config.out = out.string();
  std::ostringstream sink;
  train(config, sink, sink, false, [stop](std::int64_t step) { return step == stop; });
}

const std::vector<Program>& programs() {
  static const std::vector<Program> all = {
      {"train_imdb",
       [](std::vector<std::string> args) { return tapegrad::testing::run_imdb(std::move(args)); },
       TRAIN_IMDB_PROGRAM,
       "precision-resolved",
       [](const fs::path& out) {
         auto args = tapegrad::testing::text_tiny_args();
         args.insert(args.end(), {"--ngram-buckets", "64", "--wide-buckets", "0", "--max-len", "32", "--epochs", "8",
                                  "--valid-fraction", "0.34", "--warmup", "1", "--lr", "0.02", "--threads", "1"});
         return with_out(args, out);
       },
       {"predict", "good", "--run"},
       [](const fs::path& out) {
         imdb::Config c = tapegrad::testing::imdb_tiny_config();
         c.wide_buckets = 0;
         c.epochs = 3;  // 2 steps each, a checkpoint at each epoch's end
         train_stopped(c, out, 3, [](auto&&... a) { return imdb::train(a...); });
       }},
      {"train_lm",
       [](std::vector<std::string> args) { return tapegrad::testing::run_lm(std::move(args)); },
       TRAIN_LM_PROGRAM,
       "precision-resolved",
       [](const fs::path& out) { return with_out(tapegrad::testing::lm_tiny_args("30", "15"), out); },
       {"generate", "--max-new-tokens", "3", "good", "--run"},
       [](const fs::path& out) {
         train_stopped(tapegrad::testing::lm_tiny_config(8, 4), out, 5, [](auto&&... a) { return lm::train(a...); });
       }},
      {"train_translate",
       [](std::vector<std::string> args) { return tapegrad::testing::run_translate(std::move(args)); },
       TRAIN_TRANSLATE_PROGRAM,
       "precision_resolved",
       [](const fs::path& out) { return with_out(tapegrad::testing::translate_tiny_args("30", "15"), out); },
       {"translate", "one", "--out"},
       [](const fs::path& out) {
         train_stopped(tapegrad::testing::translate_tiny_config(6, 3), out, 4,
                       [](auto&&... a) { return translate::train(a...); });
       }},
  };
  return all;
}

nlohmann::json config_of(const fs::path& run) { return tapegrad::train::RunDirectory(run).read_config(); }

// The loss of every step (--log-every 1), from metrics.jsonl: its lines with a loss and no validation,
// test or final score.
std::vector<double> step_losses(const fs::path& run) {
  std::vector<double> losses;
  for (const auto& line : tapegrad::train::read_metrics(run / "metrics.jsonl")) {
    bool step_line = line.contains("loss");
    for (const auto& item : line.items()) {
      if (item.key().rfind("valid", 0) == 0 || item.key().rfind("test", 0) == 0 || item.key() == "final")
        step_line = false;
    }
    if (step_line) losses.push_back(line["loss"].get<double>());
  }
  return losses;
}

double mean(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, 0.0) / double(end - begin);
}

std::string here() { return tapegrad::has_native_bfloat16() ? "bf16" : "fp32"; }

const char* const kNotice = "notice: bf16 has no native kernels here";

}  // namespace

TEST_CASE("every program in bf16: a tiny run trains and says so, config.json records it", "[precision]") {
  for (const Program& p : programs()) {
    INFO(p.name);
    TempDir tmp;
    const fs::path run = tmp.path / "bf16";
    auto args = p.tiny(run);
    args.insert(args.end(), {"--precision", "bf16"});
    const CliResult r = p.run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    // The start names the machine and the precision; where bf16 has no native kernels, a notice says so.
    CHECK_THAT(r.err, Catch::Contains(tapegrad::machine_line() + "\nprecision: bf16 (--precision bf16): matrix "
                                                                 "products in bfloat16 accumulated in float"));
    CHECK((r.err.find(kNotice) != std::string::npos) == !tapegrad::has_native_bfloat16());
    const nlohmann::json config = config_of(run);
    CHECK(config.at("precision") == "bf16");
    CHECK(config.at(p.resolved_key) == "bf16");

    // It trains: every loss finite, the last quarter's mean below the first's.
    const std::vector<double> losses = step_losses(run);
    REQUIRE(losses.size() >= 16);
    for (double loss : losses) CHECK(std::isfinite(loss));
    const std::size_t quarter = losses.size() / 4;
    CHECK(mean(losses, losses.size() - quarter, losses.size()) < mean(losses, 0, quarter) - 0.05);

    // The products did take bfloat16 operands: the same run in fp32 computes other losses.
    const fs::path fp32_run = tmp.path / "fp32";
    auto fp32_args = p.tiny(fp32_run);
    fp32_args.insert(fp32_args.end(), {"--precision", "fp32"});
    const CliResult f = p.run(fp32_args);
    REQUIRE(f.code == 0);
    CHECK_THAT(f.err, Catch::Contains("\nprecision: fp32 (--precision fp32)\n"));
    CHECK(f.err.find(kNotice) == std::string::npos);
    CHECK(config_of(fp32_run).at(p.resolved_key) == "fp32");
    CHECK(step_losses(fp32_run) != losses);

    // A subcommand runs the model in the run's precision unless told otherwise, with the same notice.
    auto use = p.use;
    use.push_back(run.string());
    const CliResult used = p.run(use);
    CHECK(used.code == 0);
    CHECK((used.err.find(kNotice) != std::string::npos) == !tapegrad::has_native_bfloat16());
    use.insert(use.end(), {"--precision", "fp32"});
    const CliResult in_fp32 = p.run(use);
    CHECK(in_fp32.code == 0);
    CHECK(in_fp32.err.find(kNotice) == std::string::npos);
  }
}

TEST_CASE("every program by default (--precision auto): bf16 exactly where the CPU multiplies bfloat16 natively",
          "[precision]") {
  CHECK(examples::resolve_precision("auto") == here());
  CHECK(examples::resolve_precision("fp32") == "fp32");
  CHECK(examples::resolve_precision("bf16") == "bf16");
  for (const Program& p : programs()) {
    INFO(p.name);
    TempDir tmp;
    const CliResult r = p.run(p.tiny(tmp.path));
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err,
               Catch::Contains(tapegrad::machine_line() +
                               fmt::format("\nprecision: {} (--precision auto: this machine {})", here(),
                                           tapegrad::has_native_bfloat16() ? "multiplies bfloat16 natively"
                                                                           : "has no native bfloat16 products")));
    CHECK(r.err.find(kNotice) == std::string::npos);
    CHECK(config_of(tmp.path).at("precision") == "auto");
    CHECK(config_of(tmp.path).at(p.resolved_key) == here());
  }
}

TEST_CASE("every program: a bad --precision is refused naming the flag and the value, exit code 2", "[precision]") {
  for (const Program& p : programs()) {
    INFO(p.name);
    const std::string expected = p.name + ": --precision fp16 is not one of fp32|bf16|auto\n";
    std::vector<std::string> training = {"--precision", "fp16", "--out", "/nonexistent/run"};
    if (p.name != "train_translate") training.insert(training.end(), {"--data", "/nonexistent/aclImdb"});
    const CliResult r = p.run(training);
    CHECK(r.code == 2);
    CHECK(r.err == expected);
    // A subcommand checks it before it reads the run.
    auto use = p.use;
    use.insert(use.end(), {"/nonexistent/run", "--precision", "fp16"});
    const CliResult u = p.run(use);
    CHECK(u.code == 2);
    CHECK(u.err == expected);
  }
  // A config.json whose resolution contradicts the value asked for is refused when read.
  const auto with = [](nlohmann::json j, const char* key, const char* value) {
    j[key] = value;
    return j;
  };
  nlohmann::json lm_json = with(lm::to_json(lm::Config()), "precision", "fp32");
  CHECK(lm::validate(lm::config_from_json(with(lm_json, "precision-resolved", "bf16"))) ==
        "\"precision-resolved\" bf16 contradicts --precision fp32");
  CHECK(imdb::validate(imdb::config_from_json(with(imdb::to_json(imdb::Config()), "precision-resolved", "fp16"))) ==
        "\"precision-resolved\" fp16 is not one of fp32|bf16");
  nlohmann::json translate_json = with(translate::to_json(translate::Config()), "precision", "bf16");
  CHECK(translate::validate(translate::config_from_json(with(translate_json, "precision_resolved", "fp32"))) ==
        "\"precision_resolved\" fp32 contradicts --precision bf16");
}

TEST_CASE("every program: a new run's precision is auto, resolved when training starts", "[precision]") {
  CHECK(lm::Config().precision == "auto");
  CHECK(lm::Config().precision_resolved.empty());
  CHECK(lm::config_from_json(lm::to_json(lm::Config())).precision_resolved.empty());
}

TEST_CASE("every program: --resume keeps the precision the run started in, and refuses another --precision",
          "[precision]") {
  for (const Program& p : programs()) {
    INFO(p.name);
    TempDir tmp;
    // A finished fp32 run: --resume with bf16 would change its numerics, refused as every setting that
    // shapes the run is.
    auto args = p.tiny(tmp.path);
    args.insert(args.end(), {"--precision", "fp32"});
    REQUIRE(p.run(args).code == 0);
    const auto resumed_with = [&](const std::string& precision) {
      std::vector<std::string> resume = {"--resume", "--out", tmp.path.string(), "--precision", precision};
      if (p.name != "train_translate")
        resume = {"--resume", "--no-download", "--out", tmp.path.string(), "--precision", precision};
      return p.run(resume);
    };
    const CliResult refused = resumed_with("bf16");
    CHECK(refused.code == 2);
    CHECK(refused.err == resume_conflict(p.name, "--precision", "bf16", "fp32", tmp.path));
    {  // the same value is no change
      const CliResult same = resumed_with("fp32");
      INFO(same.err);
      CHECK(same.code == 0);
      CHECK_THAT(same.err, Catch::Contains("\nprecision: fp32 (--precision fp32)\n"));
    }

    // --precision auto resolved on another machine (here: the other side of ONEDNN_MAX_CPU_ISA) to
    // another precision: the resumed run keeps the one it started in, and says so.
    TempDir other;
    p.interrupted(other.path);
    const std::string started = config_of(other.path).at(p.resolved_key).get<std::string>();
    CHECK(started == here());
    const std::string flip = tapegrad::has_native_bfloat16() ? "ONEDNN_MAX_CPU_ISA=AVX2" : "-u ONEDNN_MAX_CPU_ISA";
    const auto [code, output] =
        tapegrad::testing::shell(fmt::format("env {} '{}' --resume --out '{}'{} 2>&1", flip, p.executable,
                                             other.path.string(), p.name == "train_translate" ? "" : " --no-download"));
    INFO(output);
    CHECK(code == 0);
    CHECK_THAT(output,
               Catch::Contains(fmt::format(
                   "\nprecision: {} (--precision auto chose it when the run started; --resume keeps it", started)));
    if (tapegrad::has_native_bfloat16()) {
      // Under AVX2, auto means fp32: the bf16 run goes on in bf16 without native kernels, and says that too.
      CHECK_THAT(output, Catch::Contains("--resume keeps it, though auto would choose fp32 on this machine)") &&
                             Catch::Contains(std::string(kNotice)) &&
                             Catch::Contains("the run keeps the precision it started in (a new run with --precision "
                                             "auto would train in fp32 here)"));
    } else if (output.find("though auto would choose") != std::string::npos) {
      CHECK_THAT(output, Catch::Contains("--resume keeps it, though auto would choose bf16 on this machine)"));
    } else {
      WARN("this CPU has no native bfloat16 either way: the resumed run's machine resolves auto as this one");
    }
    CHECK_THAT(output, Catch::Contains("resuming "));
    CHECK(config_of(other.path).at(p.resolved_key) == started);
  }
}
