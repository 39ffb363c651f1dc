// The language-model program (examples/lm): a tiny causal run on the fixture with its files, report and
// baselines; generate (same seed, same text; with and without the cache); evaluate recomputing the
// saved perplexity; --resume after an interruption; the causal property on the trained model; a masked
// run whose encoder train_imdb --init-from loads exactly; --arch llama end to end, its refused
// combinations, and an old run folder without "arch" read as gpt.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "examples/imdb/config.hpp"
#include "examples/imdb/train.hpp"
#include "examples/lm/cli.hpp"
#include "examples/lm/config.hpp"
#include "examples/lm/data.hpp"
#include "examples/lm/model.hpp"
#include "examples/lm/train.hpp"
#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/text/split.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tests/examples/cli_harness.hpp"
#include "tests/examples/programs.hpp"
#include "tests/examples/tiny_runs.hpp"
#include "tests/helpers.hpp"
#include "tests/train/timeless_metrics.hpp"

namespace fs = std::filesystem;
using tapegrad::testing::CliResult;
using tapegrad::testing::metrics_without_timing;
using tapegrad::testing::resume_conflict;
using tapegrad::testing::run_lm;
using tapegrad::testing::TempDir;

namespace {

const fs::path kFixture = fs::path(TAPEGRAD_TEST_DATA_DIR) / "aclImdb_small";

// `train_lm generate` of 12 new tokens after "the movie was" on a finished run, with extra flags; it must
// succeed.
CliResult generate_after_prompt(const fs::path& run, std::vector<std::string> extra) {
  std::vector<std::string> args = {"generate", "--run", run.string(), "--max-new-tokens", "12", "--threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult g = run_lm(args, "the movie was");
  INFO(g.err);
  REQUIRE(g.code == 0);
  return g;
}

// A tiny run on the 12-review fixture (one review of each class held out).
std::vector<std::string> tiny(const fs::path& out, const std::string& objective = "causal") {
  auto args = tapegrad::testing::lm_tiny_args("6", "3");
  // --dropout not the default 0: --resume must restore the dropout generators.
  args.insert(args.end(), {"--objective", objective, "--dropout", "0.1", "--log-every", "1", "--out", out.string()});
  return args;
}

// objective "llama": the causal objective with --arch llama (--hidden 24).
lm::Config tiny_config(const fs::path& out, const std::string& objective) {
  lm::Config c = tapegrad::testing::lm_tiny_config(6, 3);
  c.objective = objective == "llama" ? "causal" : objective;
  if (objective == "llama") {
    c.arch = "llama";
    c.hidden = 24;
  }
  c.lr = 0.01;
  c.dropout = 0.1;
  c.log_every = 1;
  c.out = out.string();
  if (objective == "masked") c.norm = "post";
  return c;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
}

}  // namespace

TEST_CASE("train_lm: a tiny causal run, its files, report, baselines and evaluate", "[lm]") {
  TempDir tmp;
  const fs::path run = tmp.path / "run";
  // Validations during training score 1 of the 2 validation reviews; the final one scores both.
  std::vector<std::string> args = tiny(run);
  args.insert(args.end(), {"--valid-reviews", "1"});
  const CliResult r = run_lm(args);
  INFO(r.err << r.out);
  REQUIRE(r.code == 0);
  for (const char* f :
       {"config.json", "vocab.txt", "metrics.jsonl", "model.safetensors", "last.ckpt.safetensors", "report.html"}) {
    CHECK(fs::exists(run / f));
  }
  CHECK_THAT(r.out, Catch::Contains("Kneser-Ney bigram: perplexity"));
  const auto lines = tapegrad::train::read_metrics(run / "metrics.jsonl");
  double best = INFINITY;
  std::size_t validations = 0;
  for (const auto& line : lines) {
    if (line.contains("valid_ppl")) {
      ++validations;
      best = std::min(best, line["valid_ppl"].get<double>());
    }
  }
  CHECK(validations == 2);
  CHECK(lines.front().contains("baseline_kneser_ney_ppl"));
  CHECK(lines.front().contains("baseline_kneser_ney_ppl_sample"));
  CHECK(lines.front()["valid_reviews"] == 2);
  CHECK(lines.front()["valid_sample_reviews"] == 1);
  const nlohmann::json& final_line = lines.back();
  REQUIRE(final_line.value("final", false));
  CHECK(final_line["best_valid_ppl"].get<double>() == best);
  const double final_ppl = final_line["final_valid_ppl"].get<double>();
  CHECK_THAT(r.out, Catch::Contains(fmt::format("all 2 validation reviews): loss {:.4f}, perplexity {:.2f}",
                                                final_line["final_valid_loss"].get<double>(), final_ppl)));
  // evaluate recomputes the final validation perplexity (all validation reviews) from the files.
  const CliResult e = run_lm({"evaluate", "--run", run.string(), "--threads", "1"});
  INFO(e.err);
  REQUIRE(e.code == 0);
  CHECK_THAT(e.out, Catch::Contains(fmt::format("perplexity {:.2f}", final_ppl)));
  CHECK_THAT(e.out, Catch::Contains("(2 reviews"));
  CHECK_THAT(e.out, Catch::Contains("add-one bigram"));
}

TEST_CASE("train_lm data: the validation subset is a fixed seeded choice among the validation reviews", "[lm]") {
  lm::Config c = tiny_config("unused", "causal");
  c.valid_fraction = 0.67;  // 4 of the fixture's 6 training reviews
  c.valid_reviews = 2;
  const lm::Data a = lm::prepare_data(c), b = lm::prepare_data(c);
  REQUIRE(a.valid.size() == 4);
  REQUIRE(a.valid_sample.size() == 2);
  const auto ids = [](const tapegrad::datasets::EncodedDataset& d, std::size_t i) {
    return std::vector<std::int64_t>(d.ids(i), d.ids(i) + d.length(i));
  };
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(ids(a.valid_sample, i) == ids(b.valid_sample, i));  // the same choice every time
    bool found = false;
    for (std::size_t j = 0; j < a.valid.size(); ++j) found = found || ids(a.valid, j) == ids(a.valid_sample, i);
    CHECK(found);
  }
  CHECK(ids(a.valid_sample, 0) != ids(a.valid_sample, 1));
  // 0, or as many as there are: all of them, in order.
  for (std::int64_t all : {0, 4, 100}) {
    c.valid_reviews = all;
    const lm::Data d = lm::prepare_data(c);
    REQUIRE(d.valid_sample.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) CHECK(ids(d.valid_sample, i) == ids(d.valid, i));
  }
}

TEST_CASE("train_lm generate: same seed same text, the cache changes nothing, the model is causal", "[lm]") {
  TempDir tmp;
  const fs::path run = tmp.path / "run";
  REQUIRE(run_lm(tiny(run)).code == 0);
  const auto generate = [&](std::vector<std::string> extra) {
    const CliResult g = generate_after_prompt(run, std::move(extra));
    CHECK_THAT(g.err, Catch::Contains("tokens/s"));
    return g.out;
  };
  const std::string a = generate({"--seed", "3", "--temperature", "1.0"});
  CHECK(a.find(" |") != std::string::npos);  // the prompt as read (unknown words as <unk>), then the new tokens
  CHECK(generate({"--seed", "3", "--temperature", "1.0"}) == a);
  CHECK(generate({"--seed", "3", "--temperature", "1.0", "--no-cache"}) == a);
  CHECK(generate({"--temperature", "0"}) == generate({"--temperature", "0", "--no-cache", "--seed", "9"}));
  // The prompt can come as arguments too.
  const CliResult args = run_lm({"generate", "--run", run.string(), "--max-new-tokens", "2", "the", "movie"});
  CHECK(args.code == 0);
  CHECK(args.out.find(" |") != std::string::npos);

  // The trained model: changing token t changes no logit before t, bit for bit.
  lm::LoadedRun loaded = lm::load_run(run);
  const auto& gpt = loaded.model->gpt();
  xt::xarray<std::int64_t> ids = {{2, 5, 9, 4, 7, 3, 8, 6}};
  const xt::xarray<float> before = gpt.forward(ids).data();
  for (std::size_t t = 0; t < ids.shape(1); ++t) {
    xt::xarray<std::int64_t> changed = ids;
    changed(0, t) = ids(0, t) == 10 ? 11 : 10;
    const xt::xarray<float> after = gpt.forward(changed).data();
    for (std::size_t s = 0; s < ids.shape(1); ++s) {
      bool same = true;
      for (std::size_t v = 0; v < before.shape(2); ++v) same = same && before(0, s, v) == after(0, s, v);
      INFO("changed " << t << ", output " << s);
      CHECK(same == (s < t));
    }
  }
  // bench: the speed with and without the cache at each context, and the same greedy tokens both ways.
  const CliResult b = run_lm(
      {"bench", "--run", run.string(), "--contexts", "8,48", "--new-tokens", "4", "--repeats", "1", "--threads", "1"});
  INFO(b.err);
  REQUIRE(b.code == 0);
  std::istringstream table(b.out);
  std::string header, line;
  std::getline(table, header);
  CHECK_THAT(header, Catch::Contains("tokens/s with cache") && Catch::Contains("tokens/s without"));
  std::vector<std::string> rows;
  while (std::getline(table, line)) rows.push_back(line);
  REQUIRE(rows.size() == 2);
  for (const auto& [row, context, prompt] : {std::tuple{rows[0], "8", "4"}, std::tuple{rows[1], "48", "44"}}) {
    std::istringstream fields(row);
    std::string c, p;
    fields >> c >> p;
    CHECK(c == context);
    CHECK(p == prompt);
    CHECK(row.size() >= 3);
    CHECK(row.substr(row.size() - 3) == "yes");
  }
  CHECK(last_line(run_lm({"bench", "--run", run.string(), "--contexts", "49"}).err) ==
        "train_lm: --contexts 49: each context must exceed --new-tokens 32 and be at most the model's context of 48");

  // Bad arguments: one line, exit 2.
  CHECK(last_line(run_lm({"generate", "--run", run.string(), "--top-p", "0"}, "x").err) ==
        "train_lm: --top-p 0 is outside (0, 1]");
  CHECK(last_line(run_lm({"generate", "--run", run.string(), "--max-new-tokens", "60"}, "the movie").err) ==
        "train_lm: the prompt's 2 tokens plus --max-new-tokens 60 exceed the model's context of 48 (--prompt-tokens "
        "keeps the prompt's last ones)");
}

TEST_CASE("train_lm --resume after an interruption ends exactly where an uninterrupted run does", "[lm]") {
  const std::string objective = GENERATE(std::string("causal"), std::string("masked"), std::string("llama"));
  INFO("objective " << objective);
  TempDir whole, parts;
  std::ostringstream out, log;
  REQUIRE_FALSE(lm::train(tiny_config(whole.path, objective), out, log, false).interrupted);
  // Stopped after step 4: the checkpoint of step 3 stays, and --resume redoes step 4.
  const lm::TrainResult first =
      lm::train(tiny_config(parts.path, objective), out, log, false, [](std::int64_t step) { return step == 4; });
  CHECK(first.interrupted);
  CHECK(first.steps == 4);
  lm::Config resume = tiny_config(parts.path, objective);
  resume.resume = true;
  CHECK_FALSE(lm::train(resume, out, log, false).interrupted);
  CHECK(read_bytes(parts.path / "model.safetensors") == read_bytes(whole.path / "model.safetensors"));
  CHECK(metrics_without_timing(parts.path / "metrics.jsonl") == metrics_without_timing(whole.path / "metrics.jsonl"));
  // A flag that contradicts the saved run is refused, and there must be a run to resume.
  const CliResult r = run_lm({"--out", parts.path.string(), "--resume", "--lr", "0.5"});
  CHECK(r.code == 2);
  CHECK(r.err == resume_conflict("train_lm", "--lr", "0.5", "0.01", parts.path));
  CHECK(run_lm({"--resume", "--out", (parts.path / "nothing").string()}).code == 2);
  // A config.json edited by hand is read strictly, and the error names it.
  const fs::path config = parts.path / "config.json";
  std::string text = read_bytes(config);
  text.replace(text.find("\"heads\""), 7, "\"haeds\"");
  std::ofstream(config, std::ios::binary) << text;
  const CliResult misspelled = run_lm({"--out", parts.path.string(), "--resume"});
  CHECK(misspelled.code == 1);
  CHECK(misspelled.err == fmt::format("train_lm: {}: unknown key \"haeds\"\n", config.string()));
}

TEST_CASE(
    "train_lm --accumulate and --activation-checkpointing are saved, and --resume keeps the first but may "
    "change the second",
    "[lm]") {
  const std::string objective = GENERATE(std::string("causal"), std::string("llama"));
  INFO("objective " << objective);
  TempDir whole, parts;
  std::ostringstream out, log;
  lm::Config config = tiny_config(whole.path, objective);
  config.accumulate = 2;
  REQUIRE_FALSE(lm::train(config, out, log, false).interrupted);
  const nlohmann::json saved = nlohmann::json::parse(read_bytes(whole.path / "config.json"));
  CHECK(saved["accumulate"] == 2);
  CHECK(saved["activation-checkpointing"] == false);
  // Interrupted, then resumed with checkpointed layers: the same gradients, so the same model, bit for bit
  // (dropout on: the masks of the second runs are the forward's).
  config.out = parts.path.string();
  CHECK(lm::train(config, out, log, false, [](std::int64_t step) { return step == 4; }).interrupted);
  config.resume = true;
  config.activation_checkpointing = true;
  CHECK_FALSE(lm::train(config, out, log, false).interrupted);
  CHECK(read_bytes(parts.path / "model.safetensors") == read_bytes(whole.path / "model.safetensors"));
  // Another number of micro-batches would change the run's rounding: refused.
  const CliResult r = run_lm({"--out", parts.path.string(), "--resume", "--accumulate", "1"});
  CHECK(r.code == 2);
  CHECK(r.err == resume_conflict("train_lm", "--accumulate", "1", "2", parts.path));
}

TEST_CASE("train_lm --accumulate: more micro-batches than the batch has reviews is refused", "[lm]") {
  TempDir tmp;
  std::vector<std::string> args = tiny(tmp.path / "x");
  args.insert(args.end(), {"--accumulate", "3"});
  const CliResult r = run_lm(args);
  CHECK(r.code == 2);
  CHECK(r.err == "train_lm: --accumulate 3 is more than --batch-size 2: a micro-batch would be empty\n");
}

TEST_CASE("train_lm: bad settings are one line naming the flag, exit code 2", "[lm]") {
  TempDir tmp;
  const auto error = [&](std::vector<std::string> args) {
    args.push_back("--out");
    args.push_back((tmp.path / "x").string());
    const CliResult r = run_lm(args);
    CHECK(r.code == 2);
    return last_line(r.err);
  };
  CHECK(error({"--objective", "next"}) == "train_lm: --objective next is not one of causal|masked");
  CHECK(error({"--norm", "post"}) == "train_lm: --norm post: the causal model (GPT) is pre-LN only");
  CHECK(error({"--d-model", "30", "--heads", "4"}) == "train_lm: --d-model 30 is not divisible by --heads 4");
  CHECK(error({"--warmup", "6000"}) == "train_lm: --warmup 6000 must be less than --steps 5600");
  CHECK(error({"--context", "1"}) == "train_lm: --context 1 is outside [2, 1000000]");
  // The subcommands' --threads, bounded like training's (4294967298 used to become 2 threads).
  for (const auto& args : {std::vector<std::string>{"evaluate", "--run", "x", "--threads", "4294967298"},
                           {"generate", "--run", "x", "--threads", "4294967298", "good"}}) {
    const CliResult r = run_lm(args);
    CHECK(r.code == 2);
    CHECK(r.err == "train_lm: --threads 4294967298 is above the limit of 1024\n");
  }
}

TEST_CASE("train_lm: reviews too short to predict anything are an error, not a crash or a perplexity of 1", "[lm]") {
  // One-word or empty reviews give no training pairs: the loader's 0 batches ended in SIGFPE; with no
  // validation pair, the baselines reported a perplexity of 1.00 over 0 tokens.
  TempDir tmp;
  for (const char* file : {"train/neg/0_1.txt", "train/neg/1_2.txt", "train/pos/0_9.txt", "train/pos/1_8.txt",
                           "test/neg/0_2.txt", "test/pos/0_8.txt"}) {
    fs::create_directories((tmp.path / "data" / file).parent_path());
    std::ofstream(tmp.path / "data" / file) << (file[1] == 'r' ? " great \n" : "fine film");
  }
  const CliResult r = run_lm({"--data", (tmp.path / "data").string(), "--no-download", "--valid-fraction", "0.5",
                              "--out", (tmp.path / "run").string()});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::EndsWith("none of the 2 training reviews has the 2 tokens a language model needs\n"));
  CHECK_FALSE(fs::exists(tmp.path / "run"));  // nothing written for a run that cannot start

  // Longer training reviews, found as train_lm finds them: the same split of the same reviews.
  const auto reviews = tapegrad::datasets::read_imdb(tmp.path / "data").train;
  const std::map<int, std::string> file_of_rating = {
      {1, "train/neg/0_1.txt"}, {2, "train/neg/1_2.txt"}, {9, "train/pos/0_9.txt"}, {8, "train/pos/1_8.txt"}};
  for (const std::size_t i : tapegrad::datasets::train_valid_split(reviews, 0.5, 0).train) {
    std::ofstream(tmp.path / "data" / file_of_rating.at(reviews[i].rating)) << "a fine film";
  }
  const CliResult valid = run_lm({"--data", (tmp.path / "data").string(), "--no-download", "--valid-fraction", "0.5",
                                  "--out", (tmp.path / "run").string()});
  CHECK(valid.code == 1);
  CHECK_THAT(valid.err, Catch::EndsWith("none of the 2 validation reviews has the 2 tokens a language model needs\n"));
}

TEST_CASE("train_lm --objective masked defaults to train_imdb's classifier", "[lm]") {
  lm::Config c;
  lm::apply_masked_defaults(c, [](const char*) { return false; });
  const imdb::Config i;
  CHECK(c.vocab_size == i.vocab_size);
  CHECK(c.context == i.max_len);
  CHECK(c.layers == i.layers);
  CHECK(c.d_model == i.d_model);
  CHECK(c.heads == i.heads);
  CHECK(c.ff == i.ff);
  CHECK(c.activation == i.activation);
  CHECK(c.norm == i.norm);
  CHECK(c.pos == i.pos);
  // and its own recipe, whatever the causal defaults.
  CHECK(c.dropout == 0.1);
  CHECK(c.attn_dropout == 0.1);
  CHECK(c.batch_size == 16);
  CHECK(c.steps == 300);
  // A flag given on the command line stays as given.
  lm::Config given;
  lm::apply_masked_defaults(given, [](const char* flag) { return std::string(flag) == "--steps"; });
  CHECK(given.steps == lm::Config().steps);
  CHECK(given.batch_size == 16);
}

TEST_CASE("train_imdb --init-from loads a masked run's embedding and encoder exactly, and rejects a misfit", "[lm]") {
  TempDir tmp;
  const fs::path pretrained = tmp.path / "mlm";
  std::vector<std::string> args = tiny(pretrained, "masked");
  args.insert(args.end(), {"--norm", "post", "--activation", "relu", "--pos", "sinusoidal"});
  const CliResult m = run_lm(args);
  INFO(m.err);
  REQUIRE(m.code == 0);
  // With lr 0 (and so no decay) the classifier keeps the loaded values: they must be the file's.
  imdb::Config c = tapegrad::testing::imdb_tiny_config();
  c.d_model = 16;
  c.ff = 32;
  c.max_len = 48;
  c.epochs = 1;
  c.warmup = 0;
  c.schedule = "constant";
  c.lr = 0.0;
  c.init_from = pretrained.string();
  c.ngram_buckets = 64;  // fresh, like the head
  c.wide_buckets = 31;   // fresh too
  c.out = (tmp.path / "imdb").string();
  std::ostringstream out, log;
  imdb::train(c, out, log, false);
  INFO(log.str());
  CHECK_THAT(log.str(), Catch::Contains("--init-from"));
  CHECK(read_bytes(tmp.path / "imdb" / "vocab.txt") == read_bytes(pretrained / "vocab.txt"));
  const tapegrad::io::safetensors::File from((pretrained / "model.safetensors").string());
  const tapegrad::io::safetensors::File classifier((tmp.path / "imdb" / "model.safetensors").string());
  std::size_t same = 0;
  for (const auto& full : classifier.names()) {
    // The encoder classifier's tensors are under "deep."; its head and n-gram table and projection, like the
    // wide part,
    // start fresh.
    if (full.rfind("deep.", 0) != 0) continue;
    const std::string name = full.substr(5);
    if (name.rfind("classifier.", 0) == 0 || name.rfind("ngrams.", 0) == 0 || name.rfind("ngram_proj.", 0) == 0)
      continue;
    INFO(name);
    REQUIRE(from.contains(name));
    CHECK(bool(classifier.get<float>(full) == from.get<float>(name)));
    ++same;
  }
  CHECK(same > 0);
  // A wider classifier does not fit: exit 2, each mismatch named.
  c.d_model = 32;
  c.out = (tmp.path / "wide").string();
  try {
    imdb::train(c, out, log, false);
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("does not fit this classifier") && Catch::Contains("embedding.weight is [") &&
                             Catch::Contains(", 16] in the file but [") && Catch::Contains(", 32] in the classifier"));
  }
}

namespace {

// tiny() with Llama's width flag for GPT's: --arch llama refuses --ff.
std::vector<std::string> tiny_llama(const fs::path& out) {
  std::vector<std::string> args = tiny(out);
  const auto ff = std::find(args.begin(), args.end(), "--ff");
  args.erase(ff, ff + 2);
  args.insert(args.end(), {"--arch", "llama", "--hidden", "24"});
  return args;
}

}  // namespace

TEST_CASE("train_lm --arch llama: train, evaluate, generate with and without the cache, bench, report", "[lm]") {
  TempDir tmp;
  const fs::path run = tmp.path / "run";
  const CliResult r = run_lm(tiny_llama(run));
  INFO(r.err << r.out);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err + r.out, Catch::Contains("model: Llama (causal objective)"));
  const nlohmann::json config = nlohmann::json::parse(read_bytes(run / "config.json"));
  CHECK(config["arch"] == "llama");
  CHECK(config["hidden"] == 24);
  CHECK_THAT(read_bytes(run / "report.html"), Catch::Contains("causal objective (llama)"));
  const nlohmann::json final_line = tapegrad::train::read_metrics(run / "metrics.jsonl").back();
  REQUIRE(final_line.value("final", false));
  const double final_ppl = final_line["final_valid_ppl"].get<double>();

  const CliResult e = run_lm({"evaluate", "--run", run.string(), "--threads", "1"});
  INFO(e.err);
  REQUIRE(e.code == 0);
  CHECK_THAT(e.out, Catch::Contains(fmt::format("perplexity {:.2f}", final_ppl)));
  CHECK_THAT(e.out, Catch::Contains("Kneser-Ney bigram"));

  const auto generate = [&](std::vector<std::string> extra) {
    return generate_after_prompt(run, std::move(extra)).out;
  };
  const std::string sampled = generate({"--seed", "3", "--temperature", "1.0"});
  CHECK(sampled.find(" |") != std::string::npos);
  CHECK(generate({"--seed", "3", "--temperature", "1.0", "--no-cache"}) == sampled);
  CHECK(generate({"--temperature", "0"}) == generate({"--temperature", "0", "--no-cache"}));

  const CliResult b = run_lm(
      {"bench", "--run", run.string(), "--contexts", "8,48", "--new-tokens", "4", "--repeats", "1", "--threads", "1"});
  INFO(b.err);
  REQUIRE(b.code == 0);
  std::istringstream table(b.out);
  std::string line;
  std::getline(table, line);  // the header
  std::size_t rows = 0;
  for (; std::getline(table, line); ++rows) CHECK(line.substr(line.size() - 3) == "yes");
  CHECK(rows == 2);

  const lm::LoadedRun loaded = lm::load_run(run);
  CHECK(loaded.model->module().name() == "Llama");
  CHECK(loaded.model->causal_lm().max_len() == 48);
  CHECK_THROWS_WITH(loaded.model->gpt(), "this run's model is a Llama, not a GPT");
}

TEST_CASE("train_lm: a run folder of an older train_lm is refused, naming its version", "[lm]") {
  // Its settings are not guessed (a run from before --arch would otherwise read as some default model).
  TempDir tmp;
  const fs::path run = tmp.path / "run";
  REQUIRE(run_lm(tiny(run)).code == 0);
  nlohmann::json saved = nlohmann::json::parse(read_bytes(run / "config.json"));
  CHECK(saved["version"] == lm::kConfigVersion);
  saved.erase("version");
  saved.erase("arch");
  std::ofstream(run / "config.json", std::ios::binary) << saved.dump();
  // (evaluate refuses the edited file before, by its checksum in model.safetensors.)
  const CliResult r = run_lm({"--resume", "--out", run.string()});
  CHECK(r.code == 1);
  CHECK(r.err == fmt::format("train_lm: {}: no \"version\": a run of an older train_lm (version 1), which this one "
                             "does not read (it reads version 3); train it anew\n",
                             (run / "config.json").string()));
}

TEST_CASE("train_lm --arch: bad combinations are one line naming the flags, exit code 2", "[lm]") {
  TempDir tmp;
  const auto error = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--out", (tmp.path / "x").string()});
    const CliResult r = run_lm(args);
    CHECK(r.code == 2);
    return last_line(r.err);
  };
  CHECK(error({"--arch", "t5"}) == "train_lm: --arch t5 is not one of gpt|llama");
  CHECK(error({"--arch", "llama", "--objective", "masked"}) ==
        "train_lm: --arch llama --objective masked: llama is a causal model; the masked objective trains "
        "train_imdb's encoder (--arch gpt)");
  CHECK(error({"--arch", "llama", "--pos", "learned"}) ==
        "train_lm: --pos does not apply to --arch llama: it rotates queries and keys (RoPE)");
  CHECK(error({"--arch", "llama", "--ff", "256"}) ==
        "train_lm: --ff does not apply to --arch llama: its SwiGLU "
        "width is --hidden");
  CHECK(error({"--hidden", "256"}) == "train_lm: --hidden is --arch llama's SwiGLU width; --arch gpt has --ff");
  CHECK(error({"--arch", "llama", "--hidden", "0"}) == "train_lm: --hidden 0 must be positive");
  CHECK(error({"--arch", "llama", "--d-model", "12", "--heads", "4"}) ==
        "train_lm: --arch llama: the head size --d-model 12 / --heads 4 = 3 must be even (rotary embeddings)");
}
