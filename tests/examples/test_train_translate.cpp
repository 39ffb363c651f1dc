// The translation program (examples/translate) on the train/ layer: a tiny run writes metrics.jsonl,
// the best model, the checkpoint and the report page; Ctrl-C stops it with the last checkpoint intact
// (exit 130 from the built program); --resume ends exactly where an uninterrupted run does.
#include <fmt/format.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "examples/translate/batches.hpp"
#include "examples/translate/cli.hpp"
#include "examples/translate/report.hpp"
#include "examples/translate/training.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/examples/programs.hpp"
#include "tests/examples/tiny_runs.hpp"
#include "tests/helpers.hpp"
#include "tests/train/timeless_metrics.hpp"

namespace fs = std::filesystem;
using namespace tapegrad::testing;

namespace {

// A tiny model: 6 steps of 8 numbers, validation after steps 3 and 6.
std::vector<std::string> tiny_args(const fs::path& out, const std::string& steps = "6",
                                   const std::string& eval_every = "3") {
  auto args = tapegrad::testing::translate_tiny_args(steps, eval_every);
  args.insert(args.end(), {"--log-every", "1", "--out", out.string()});
  return args;
}

translate::Config tiny_config(const fs::path& out) {
  translate::Config c = tapegrad::testing::translate_tiny_config(6, 3);
  c.log_every = 1;
  c.out = out.string();
  return c;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every float tensor of a safetensors file, by name.
std::map<std::string, std::vector<float>> floats_of(const fs::path& path) {
  const tapegrad::io::safetensors::File file(path.string());
  std::map<std::string, std::vector<float>> out;
  for (const auto& name : file.names()) {
    if (file.dtype(name) != tapegrad::io::safetensors::Dtype::F32) continue;
    const auto values = file.get<float>(name);
    out[name].assign(values.begin(), values.end());
  }
  return out;
}

}  // namespace

TEST_CASE("train_translate: a tiny run writes metrics.jsonl, the model, the checkpoint and the report page",
          "[translate]") {
  TempDir tmp;
  const CliResult r = run_translate(tiny_args(tmp.path));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("test exact match (greedy): ") != std::string::npos);
  CHECK(r.out.find(fmt::format("report: {}", (tmp.path / "report.html").string())) != std::string::npos);
  for (const char* name :
       {"config.json", "metrics.jsonl", "last.ckpt.safetensors", "model.safetensors", "attention.svg", "report.html"}) {
    CHECK(fs::exists(tmp.path / name));
  }
  // One line per step (--log-every 1), one per validation (steps 3 and 6), and the test score.
  const auto lines = tapegrad::train::read_metrics(tmp.path / "metrics.jsonl");
  REQUIRE(lines.size() == 6 + 2 + 1);
  CHECK(lines[0].contains("loss"));
  CHECK(lines[0].contains("acc"));
  CHECK(lines[3]["step"] == 3);
  for (const char* key : {"valid_loss", "valid_acc", "valid_exact"}) CHECK(lines[3].contains(key));
  CHECK(lines.back()["split"] == "test");
  const double test_exact = lines.back()["test_exact"].get<double>();

  // The page: both curves, a point per validation, the test score.
  const std::string page = read_bytes(tmp.path / "report.html");
  CHECK(page.find("<title>train_translate report</title>") != std::string::npos);
  CHECK(page.find(R"(data-series="train_loss" data-points="6")") != std::string::npos);
  CHECK(page.find(R"(data-series="valid_exact" data-points="2")") != std::string::npos);
  CHECK(page.find("id=\"test-score\"") != std::string::npos);
  CHECK(std::count(page.begin(), page.end() - 1, '\n') > 10);

  // evaluate reads the best model without an optimizer and gets the score training printed.
  const CliResult eval = run_translate({"evaluate", "--out", tmp.path.string()});
  REQUIRE(eval.code == 0);
  CHECK(eval.out.rfind(fmt::format("words2digits test exact match (greedy): {:.2f}%", 100.0 * test_exact), 0) == 0);
  const CliResult tr = run_translate({"translate", "--out", tmp.path.string()}, "one\n");
  CHECK(tr.code == 0);
  // Text the model cannot read is refused by name, not answered with a number (it was "10" for "",
  // "   " and "banana split", and "12" for "twelve banana").
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"", "it holds no number words"},
           {"   ", "it holds no number words"},
           {"banana split", "'banana' is not a number word"},
           {"twelve banana", "'banana' is not a number word"},
           {"\xc3\xa9t\xc3\xa9", "'\xc3\xa9t\xc3\xa9' is not a number word"}}) {
    const CliResult bad = run_translate({"translate", "--out", tmp.path.string(), "one", text});
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err == "train_translate: cannot translate '" + text + "': " + why + "\n");
  }
  const CliResult bad_line = run_translate({"translate", "--out", tmp.path.string()}, "twelve\nforty-two 7\n");
  CHECK(bad_line.code == 2);
  CHECK(bad_line.err == "train_translate: cannot translate 'forty-two 7': '7' is not a number word\n");
  // A text longer than the model reads: a usage error that quotes its start, not the whole 1 MB line.
  std::string long_text;
  for (int i = 0; i < 250'000; ++i) long_text += "one ";
  const CliResult too_long = run_translate({"translate", "--out", tmp.path.string()}, long_text + "\n");
  CHECK(too_long.code == 2);
  CHECK(too_long.err == "train_translate: '" + long_text.substr(0, 80) +
                            "... (1000000 bytes)' is 250000 tokens, longer than the model's 32\n");
  // A beam wider than training's limit was a std::bad_alloc; the limit is checked before the run is read.
  const CliResult wide = run_translate({"translate", "--out", tmp.path.string(), "--beam", "4294967298", "one"});
  CHECK(wide.code == 2);
  CHECK(wide.err == "train_translate: --beam 4294967298 is above the limit of 1024\n");

  // A second run into the same folder is refused and leaves it as it was.
  const std::string model = read_bytes(tmp.path / "model.safetensors");
  const CliResult again = run_translate(tiny_args(tmp.path));
  CHECK(again.code == 2);
  CHECK(again.err == fmt::format("train_translate: --out {} already holds a run (config.json, metrics.jsonl, "
                                 "last.ckpt.safetensors, model.safetensors): continue it with --resume, or pass "
                                 "--overwrite to replace it\n",
                                 tmp.path.string()));
  CHECK(read_bytes(tmp.path / "model.safetensors") == model);

  // A damaged model is refused with a message naming it.
  std::string damaged = model;
  damaged[damaged.size() - 3] ^= 0x04;
  std::ofstream(tmp.path / "model.safetensors", std::ios::binary) << damaged;
  const CliResult refused = run_translate({"evaluate", "--out", tmp.path.string()});
  CHECK(refused.code == 1);
  CHECK(refused.err.find((tmp.path / "model.safetensors").string()) != std::string::npos);
  CHECK(refused.err.find("checksum mismatch") != std::string::npos);
}

TEST_CASE("train_translate: untranslatable names what a source of either direction cannot hold", "[translate]") {
  using translate::Direction;
  using translate::untranslatable;
  for (const char* ok : {"twelve", "Forty-Two", "one hundred and one", "nine hundred million"}) {
    CHECK(untranslatable(ok, Direction::WordsToDigits) == std::nullopt);
  }
  CHECK(untranslatable("", Direction::WordsToDigits) == "it holds no number words");
  CHECK(untranslatable("twelve 5", Direction::WordsToDigits) == "'5' is not a number word");
  CHECK(untranslatable("<pad>", Direction::WordsToDigits) == "'<pad>' is not a number word");
  CHECK(untranslatable("<UNK>", Direction::WordsToDigits) == "'<UNK>' is not a number word");
  for (const char* ok : {"0", "42", "1,000,000", " 999999999 ", "000123"}) {
    CHECK(untranslatable(ok, Direction::DigitsToWords) == std::nullopt);
  }
  CHECK(untranslatable(" , ", Direction::DigitsToWords) == "it holds no digits");
  CHECK(untranslatable("12a", Direction::DigitsToWords) == "'a' is not a digit");
  CHECK(untranslatable("1\xc3\xa9", Direction::DigitsToWords) == "'\xc3\xa9' is not a digit");
  CHECK(untranslatable("twelve", Direction::DigitsToWords) == "'t' is not a digit");
  CHECK(untranslatable("-5", Direction::DigitsToWords) == "'-' is not a digit");
  CHECK(untranslatable("1000000000", Direction::DigitsToWords) ==
        "it is above 999999999, the largest number of the task");
}

TEST_CASE("train_translate: Ctrl-C keeps the last complete checkpoint, and --resume ends as an uninterrupted run",
          "[translate]") {
  TempDir whole, cut;
  std::ostringstream out, log;
  const auto full = translate::train(tiny_config(whole.path), out, log, false);
  REQUIRE_FALSE(full.interrupted);
  CHECK(full.steps == 6);
  CHECK(full.validations == 2);

  // SIGINT once step 4 is done (it arrives while the trainer is on step 5): the run stops after step 5;
  // the checkpoint of step 3 is what stays.
  tapegrad::train::install_interrupt_handler();
  const auto first = translate::train(tiny_config(cut.path), out, log, false, [](std::int64_t step) {
    if (step == 4) std::raise(SIGINT);
    return false;
  });
  tapegrad::train::remove_interrupt_handler();
  CHECK(first.interrupted);
  CHECK(first.steps == 5);
  translate::Config probe_config = tiny_config(cut.path);
  tapegrad::Generator gen(5);
  translate::Model probe(probe_config.model_options(), gen);
  CHECK(tapegrad::train::load_checkpoint((cut.path / "last.ckpt.safetensors").string(), probe) == 3);
  CHECK(log.str().find("interrupted: stopped after step 5; the last complete checkpoint is") != std::string::npos);

  const CliResult resumed = run_translate({"--out", cut.path.string(), "--resume", "--threads", "1"});
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(floats_of(cut.path / "last.ckpt.safetensors") == floats_of(whole.path / "last.ckpt.safetensors"));
  // The model files are equal but for the digest of config.json, whose "out" differs.
  CHECK(floats_of(cut.path / "model.safetensors") == floats_of(whole.path / "model.safetensors"));
  auto cut_metadata = tapegrad::io::safetensors::File((cut.path / "model.safetensors").string()).metadata();
  auto whole_metadata = tapegrad::io::safetensors::File((whole.path / "model.safetensors").string()).metadata();
  for (auto* m : {&cut_metadata, &whole_metadata}) m->erase("file.config.json"), m->erase("tapegrad.checksum");
  CHECK(cut_metadata == whole_metadata);
  CHECK(metrics_without_timing(cut.path / "metrics.jsonl") == metrics_without_timing(whole.path / "metrics.jsonl"));

  // --resume takes the run as saved: a flag that would change it is refused.
  const CliResult changed = run_translate({"--out", cut.path.string(), "--resume", "--steps", "9"});
  CHECK(changed.code == 2);
  CHECK(changed.err == resume_conflict("train_translate", "--steps", "9", "6", cut.path));
}

TEST_CASE("train_translate --activation-checkpointing is saved, and --resume may turn it on", "[translate]") {
  TempDir whole, parts;
  std::ostringstream out, log;
  REQUIRE_FALSE(translate::train(tiny_config(whole.path), out, log, false).interrupted);
  const nlohmann::json saved = nlohmann::json::parse(read_bytes(whole.path / "config.json"));
  CHECK(saved["activation_checkpointing"] == false);
  // Interrupted, then resumed with checkpointed encoder and decoder blocks: the same gradients, so the
  // same model, bit for bit (dropout on: the masks of the second runs are the forward's).
  translate::Config config = tiny_config(parts.path);
  REQUIRE(config.dropout > 0);
  CHECK(translate::train(config, out, log, false, [](std::int64_t step) { return step == 4; }).interrupted);
  config.resume = true;
  config.activation_checkpointing = true;
  CHECK_FALSE(translate::train(config, out, log, false).interrupted);
  CHECK(floats_of(parts.path / "model.safetensors") == floats_of(whole.path / "model.safetensors"));
  CHECK(metrics_without_timing(parts.path / "metrics.jsonl") == metrics_without_timing(whole.path / "metrics.jsonl"));
}

TEST_CASE("train_translate: SIGINT to the running program exits 130 with a loadable checkpoint", "[translate]") {
  TempDir tmp;
  std::string args;
  for (const auto& a : tiny_args(tmp.path / "run", "100000", "2")) args += " '" + a + "'";
  // Many steps, a checkpoint every 2; SIGINT once the first checkpoint exists (waiting at most 120 s).
  const std::string script = fmt::format(
      "'{}' {} > '{}' 2>&1 & pid=$!; "
      "for i in $(seq 1200); do [ -f '{}' ] && break; sleep 0.1; done; kill -INT $pid; wait $pid; echo $?",
      TRAIN_TRANSLATE_PROGRAM, args, (tmp.path / "log.txt").string(),
      (tmp.path / "run" / "last.ckpt.safetensors").string());
  const auto [code, printed] = shell(script);
  REQUIRE(code == 0);
  INFO(read_bytes(tmp.path / "log.txt"));
  CHECK(printed == "130\n");
  translate::Config c = tiny_config(tmp.path / "run");
  tapegrad::Generator gen(5);
  translate::Model model(c.model_options(), gen);
  const std::int64_t step =
      tapegrad::train::load_checkpoint((tmp.path / "run" / "last.ckpt.safetensors").string(), model);
  CHECK(step >= 2);
  CHECK(step % 2 == 0);
  CHECK(read_bytes(tmp.path / "log.txt").find("interrupted: stopped after step") != std::string::npos);
  CHECK(fs::exists(tmp.path / "run" / "report.html"));
}

TEST_CASE("train_translate: config.json is read strictly, and a changed one is refused against the model",
          "[translate]") {
  // The reader's errors themselves: tests/examples/test_flags.cpp.
  CHECK(translate::to_json(translate::config_from_json(translate::to_json(translate::Config()))) ==
        translate::to_json(translate::Config()));

  // A finished tiny run whose config.json is then edited: evaluate refuses it, naming the file.
  tapegrad::testing::TempDir tmp;
  std::ostringstream out, log;
  translate::train(tiny_config(tmp.path), out, log, false);
  const fs::path config = tmp.path / "config.json";
  std::string text = read_bytes(config);
  text.replace(text.find("\"nhead\": 2"), 10, "\"nhead\": 1");
  std::ofstream(config, std::ios::binary) << text;
  const CliResult evaluated = run_translate({"evaluate", "--out", tmp.path.string()});
  CHECK(evaluated.code == 1);
  CHECK_THAT(evaluated.err,
             Catch::Contains(config.string() + ": changed or damaged since model.safetensors was written"));

  // --resume reads it strictly too, naming the file: a misspelled key, a setting out of its range.
  for (const auto& [from, to, expected] :
       {std::tuple{"\"nhead\": 1", "\"nhaed\": 2", "unknown key \"nhaed\""},
        std::tuple{"\"nhaed\": 2", "\"nhead\": 3", "--d-model 16 is not divisible by --nhead 3"}}) {
    text.replace(text.find(from), std::string(from).size(), to);
    std::ofstream(config, std::ios::binary) << text;
    const CliResult resumed = run_translate({"--resume", "--out", tmp.path.string()});
    CHECK(resumed.code == 1);
    CHECK(resumed.err == fmt::format("train_translate: {}: {}\n", config.string(), expected));
  }
}
