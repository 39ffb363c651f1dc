// The pieces a training program is built on: the run folder, the model file, a model-only load of a
// checkpoint, metrics.jsonl on --resume, exit codes, and the Trainer's loop (interrupted and resumed
// bit for bit, best model and checkpoint, metrics lines).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/optim/adagrad.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/rmsprop.hpp"
#include "tapegrad/optim/sgd.hpp"
#include "tapegrad/train/train.hpp"
#include "tests/helpers.hpp"
#include "tests/train/timeless_metrics.hpp"

using namespace tapegrad;
namespace fs = std::filesystem;
namespace st = tapegrad::io::safetensors;
using tapegrad::testing::metrics_without_timing;
using tapegrad::testing::TempDir;

namespace {

// A two-layer network with dropout, so that a run has a model generator to checkpoint.
struct Net : nn::Module<double> {
  explicit Net(std::uint64_t seed) {
    Generator gen(seed);
    fc1 = register_module("fc1", std::make_shared<nn::Linear<double>>(4, 8, gen));
    drop = register_module("drop", std::make_shared<nn::Dropout<double>>(0.2, seed + 1));
    fc2 = register_module("fc2", std::make_shared<nn::Linear<double>>(8, 3, gen));
  }
  Tensor<double> forward(const Tensor<double>& x) const { return fc2->forward(drop->forward(relu(fc1->forward(x)))); }
  std::string name() const override { return "Net"; }
  std::shared_ptr<nn::Linear<double>> fc1, fc2;
  std::shared_ptr<nn::Dropout<double>> drop;
};

// n examples drawn from gen: 4 features in [-1, 1), labelled by which of the first three is largest.
std::pair<Tensor<double>, IndexArray> draw(Generator& gen, std::size_t n) {
  Tensor<double> x = Tensor<double>::uniform({n, 4}, -1.0, 1.0, gen);
  IndexArray labels = xt::zeros<std::int64_t>({n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::int64_t c = 1; c < 3; ++c) {
      if (x.data()(i, c) > x.data()(i, labels(i))) labels(i) = c;
    }
  }
  return {x, labels};
}

// A step's output for one batch: the model's mean cross-entropy over its labels.
train::StepOutput<double> loss_on(const Net& model, const Tensor<double>& x, const IndexArray& labels) {
  train::StepOutput<double> out;
  out.loss = cross_entropy(model.forward(x), labels);
  out.count = static_cast<double>(labels.size());
  return out;
}

std::size_t correct_of(const Tensor<double>& logits, const IndexArray& labels) {
  std::size_t correct = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < 3; ++c) {
      if (logits.data()(i, c) > logits.data()(i, best)) best = c;
    }
    correct += best == labels(i) ? 1 : 0;
  }
  return correct;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// Every tensor of a safetensors file as doubles, by name (the checkpoints here hold F64, I64, U64, BOOL).
std::map<std::string, std::vector<double>> values_of(const fs::path& path) {
  const st::File file(path.string());
  std::map<std::string, std::vector<double>> out;
  for (const auto& name : file.names()) {
    auto& v = out[name];
    switch (file.dtype(name)) {
      case st::Dtype::F64:
        for (double x : file.get<double>(name)) v.push_back(x);
        break;
      case st::Dtype::I64:
        for (auto x : file.get<std::int64_t>(name)) v.push_back(static_cast<double>(x));
        break;
      case st::Dtype::U64:
        // The generator words: compared through their bit patterns split in halves, exactly.
        for (auto x : file.get<std::uint64_t>(name)) {
          v.push_back(static_cast<double>(x >> 32));
          v.push_back(static_cast<double>(x & 0xffffffffULL));
        }
        break;
      case st::Dtype::BOOL:
        for (bool x : file.get<bool>(name)) v.push_back(x ? 1 : 0);
        break;
      default:
        FAIL("unexpected dtype of " << name);
    }
  }
  return out;
}

optim::AdamOptions adam_options() {
  optim::AdamOptions o;
  o.lr = 0.05;
  return o;
}

// One training run of Net in dir: 3 epochs of 4 steps, validation every 3 steps and at each epoch's end.
struct Run {
  Net model;
  optim::Adam<double> optimizer;
  Generator sampler;
  std::ostringstream log;
  train::Progress progress{log, false, 2};
  std::pair<Tensor<double>, IndexArray> valid;

  Run(std::uint64_t seed)
      : model(seed), optimizer(model.parameters(), adam_options()), sampler(seed + 7), valid([] {
          Generator g(99);
          return draw(g, 30);
        }()) {}

  train::TrainerResult train(const train::RunDirectory& dir, bool resume, std::function<bool(std::int64_t)> stop = {}) {
    train::TrainerOptions options;
    options.epochs = 3;
    options.steps_per_epoch = 4;
    options.schedule = [](std::int64_t step) { return 0.05 * std::min(1.0, double(step) / 3.0); };
    options.log_every = 2;
    options.eval_every = 3;
    options.clip_norm = 1.0;
    options.resume = resume;
    options.stop_after_step = std::move(stop);
    train::TrainerHooks<double> hooks;
    hooks.forward = [this](std::int64_t, std::int64_t, const train::MicroBatch&) {
      const auto [x, labels] = draw(sampler, 8);
      const Tensor<double> logits = model.forward(x);
      train::StepOutput<double> out;
      out.loss = cross_entropy(logits, labels);
      out.count = 8;
      out.correct = static_cast<double>(correct_of(logits, labels));
      out.tokens = 8;
      return out;
    };
    hooks.validate = [this] {
      model.eval();
      const Tensor<double> logits = model.forward(valid.first);
      train::Evaluation e;
      e.score = double(correct_of(logits, valid.second)) / 30.0;
      e.metrics = {{"valid_acc", e.score}};
      e.summary = fmt::format("valid acc {:.2f}", e.score);
      return e;
    };
    hooks.generators = {{"sampler", &sampler}};
    train::Trainer<double> trainer(dir, model, optimizer, options, hooks, progress);
    return trainer.run();
  }
};

// The smallest Trainer set-up in a folder of its own: Net, Adam, a constant learning rate of 0.01, a
// quiet log, and steps on fresh draws of 4 examples; a test sets the epochs and what it checks.
struct Bare {
  TempDir tmp;
  train::RunDirectory run{tmp.path};
  Net model{1};
  optim::Adam<double> adam{model.parameters()};
  std::ostringstream log;
  train::Progress progress{log, false, 1};
  Generator data{4};
  train::TrainerOptions options;
  train::TrainerHooks<double> hooks;

  Bare() {
    options.schedule = [](std::int64_t) { return 0.01; };
    hooks.forward = [this](std::int64_t, std::int64_t, const train::MicroBatch&) {
      const auto [x, labels] = draw(data, 4);
      return loss_on(model, x, labels);
    };
  }
  train::Trainer<double> trainer() { return train::Trainer<double>(run, model, adam, options, hooks, progress); }
};

}  // namespace

TEST_CASE("RunDirectory: a new run never replaces a finished one unless told to", "[train]") {
  TempDir tmp;
  const train::RunDirectory run(tmp.path / "run", {"vocab.txt"});
  CHECK(run.checkpoint() == tmp.path / "run" / "last.ckpt.safetensors");
  CHECK(run.model() == tmp.path / "run" / "model.safetensors");
  CHECK(run.metrics() == tmp.path / "run" / "metrics.jsonl");
  CHECK(run.file("vocab.txt") == tmp.path / "run" / "vocab.txt");

  // A folder that does not exist yet is fine, and so is one a run left without a checkpoint or a model.
  CHECK_NOTHROW(run.check_new(false));
  CHECK(run.start_new(false).empty());
  run.write_config({{"lr", 0.5}, {"name", "a"}});
  CHECK(run.read_config() == nlohmann::json({{"lr", 0.5}, {"name", "a"}}));
  CHECK(fs::directory_iterator(run.dir()) != fs::directory_iterator());
  for (const auto& entry : fs::directory_iterator(run.dir())) {
    CHECK(entry.path().filename() == "config.json");  // no temporary left behind
  }
  std::ofstream(run.file("vocab.txt")) << "a\n";
  CHECK_NOTHROW(run.check_new(false));

  // With a model or a checkpoint, only --overwrite may start again; then every file of the run moves
  // aside. A model without a checkpoint (stopped between the first two saves) cannot be resumed.
  struct Written {
    fs::path file;
    const char* bytes;
    const char* held;  // the files the message lists
    const char* advice;
  };
  for (const Written& w :
       {Written{run.model(), "weights", "config.json, model.safetensors, vocab.txt",
                "it has no checkpoint to continue from; pass --overwrite to replace it"},
        Written{run.checkpoint(), "state", "config.json, last.ckpt.safetensors, model.safetensors, vocab.txt",
                "continue it with --resume, or pass --overwrite to replace it"}}) {
    std::ofstream(w.file) << w.bytes;
    CHECK_THROWS_MATCHES(
        run.start_new(false), train::UsageError,
        Catch::Message(fmt::format("--out {} already holds a run ({}): {}", run.dir().string(), w.held, w.advice)));
  }
  fs::remove(run.checkpoint());
  CHECK(read_bytes(run.model()) == "weights");
  const auto moved = run.start_new(true);
  CHECK(moved == std::vector<std::string>{"config.json", "model.safetensors", "vocab.txt"});
  CHECK(run.existing_files().empty());
  CHECK(read_bytes(run.previous() / "model.safetensors") == "weights");
  // Kept aside, the overwritten run still counts: a new run without --overwrite is refused.
  CHECK_THROWS_WITH(run.check_new(false), Catch::Contains("already holds a run (previous-run/)"));
  // The new run stops before its first checkpoint: the previous run comes back, the new one's files go.
  run.write_config({{"lr", 1}});
  std::ofstream(run.metrics()) << "{}\n";
  CHECK(run.restore_previous() == std::vector<std::string>{"config.json", "model.safetensors", "vocab.txt"});
  CHECK(read_bytes(run.model()) == "weights");
  CHECK(read_bytes(run.file("vocab.txt")) == "a\n");
  CHECK_FALSE(fs::exists(run.metrics()));
  CHECK_FALSE(fs::exists(run.previous()));
  CHECK(run.restore_previous().empty());
  // Killed before its first checkpoint, the next start puts the previous run back (settle); killed after
  // it, the next start deletes it.
  run.start_new(true);
  run.write_config({{"lr", 2}});
  const auto put_back = run.settle();
  REQUIRE(put_back.size() == 1);
  CHECK_THAT(put_back[0], Catch::StartsWith("put back the previous run's config.json, model.safetensors, vocab.txt"));
  CHECK(read_bytes(run.model()) == "weights");
  run.start_new(true);
  std::ofstream(run.checkpoint()) << "new state";
  CHECK_THAT(run.settle(), Catch::Equals(std::vector<std::string>{fmt::format(
                               "removed {}: the run that replaced it has a checkpoint", run.previous().string())}));
  CHECK_FALSE(fs::exists(run.previous()));
  CHECK(run.settle().empty());
  fs::remove(run.checkpoint());
  fs::remove(run.config());
  // The temporary files of killed saves go too, whatever file they were for; a live process's stay.
  const pid_t dead = tapegrad::testing::exited_pid();
  for (const std::string name : {"report.html", "last.ckpt.safetensors", "config.json"}) {
    std::ofstream(run.file(fmt::format("{}.tmp.{}.0", name, dead))) << "half";
  }
  const std::string live = fmt::format("model.safetensors.tmp.{}.3", ::getpid());
  std::ofstream(run.file(live)) << "saving";
  std::ofstream(run.file("notes.tmp.txt")) << "mine";
  CHECK(run.settle().size() == 3);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(run.dir())) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{live, "notes.tmp.txt"});
  fs::remove(run.file(live));
  fs::remove(run.file("notes.tmp.txt"));
  CHECK(fs::is_empty(run.dir()));

  CHECK_THROWS_MATCHES(run.check_resumable(), train::UsageError,
                       Catch::Message(fmt::format("--resume: {} does not exist, so there is no run to continue",
                                                  run.config().string())));
  CHECK_THROWS_MATCHES(run.check_has({"config.json"}), train::UsageError,
                       Catch::Message(fmt::format("--run {} has no config.json", run.dir().string())));
  std::ofstream(run.config()) << "{ not json";
  CHECK_THROWS_WITH(run.read_config(), Catch::StartsWith(run.config().string() + ": "));
  const train::RunDirectory file_not_folder(run.config());
  CHECK_THROWS_WITH(file_not_folder.check_new(false), Catch::Contains("is a file, not a run folder"));
}

TEST_CASE("save_model / load_model: a model file that checks itself, without an optimizer", "[train]") {
  TempDir tmp;
  const fs::path path = tmp.path / "model.safetensors";
  Net trained(1);
  train::save_model(path, trained, {{"step", "12"}});
  CHECK_THROWS_AS(train::save_model(path, trained, {{"tapegrad.checksum", "x"}}), std::invalid_argument);

  Net fresh(2);
  const auto metadata = train::load_model(path, fresh);
  CHECK(metadata == st::Metadata{{"step", "12"}});
  for (const auto& [name, tensor] : trained.state_dict()) {
    CHECK(xt::all(xt::equal(fresh.state_dict().at(name).data(), tensor.data())));
  }
  // A plain safetensors reader (torch's, or io::safetensors) loads it too.
  auto state = Net(3).state_dict();
  CHECK_NOTHROW(st::load_state_dict(path.string(), state));

  const std::string bytes = read_bytes(path);
  const auto refused = [&](const std::string& damaged) {
    write_bytes(path, damaged);
    Net target(4);
    const auto before = target.fc1->weight.data();
    std::string message;
    try {
      train::load_model(path, target);
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    CHECK(xt::all(xt::equal(target.fc1->weight.data(), before)));  // untouched
    CHECK_THAT(message, Catch::StartsWith(path.string()));
    return message;
  };
  // A flipped bit in the last value (fc2.weight's): the checksum finds it.
  std::string flipped = bytes;
  flipped[flipped.size() - 2] ^= 0x01;
  CHECK_THAT(refused(flipped), Catch::Contains("checksum mismatch"));
  CHECK_THAT(refused(bytes.substr(0, bytes.size() - 5)), Catch::Contains(path.string()));

  // A diverged run's non-finite weights: save_model refuses them, leaving the previous file as it was...
  Net diverged(1);
  diverged.fc2->bias.mutable_data()(1) = std::numeric_limits<double>::quiet_NaN();
  write_bytes(path, bytes);
  CHECK_THROWS_WITH(train::save_model(path, diverged),
                    Catch::Contains("not saved, the model \"fc2.bias\" holds 1 non-finite value(s)"));
  CHECK(read_bytes(path) == bytes);
  // ... and load_model refuses them even with a valid checksum (a file written by other means).
  std::map<std::string, st::Array> tensors;
  for (const auto& [name, tensor] : diverged.state_dict()) tensors[name] = tensor.data();
  st::save_file(path.string(), tensors, {{train::kChecksumKey, train::checksum(st::views_of(tensors), {})}});
  const std::string nan_message = refused(read_bytes(path));
  CHECK_THAT(nan_message, Catch::Contains("1 problem(s)") && Catch::Contains("\"fc2.bias\" holds nan at flat index 1"));

  // A file without the checksum (written by another tool) is not taken for a checked one.
  st::save_state_dict(path.string(), trained.state_dict());
  CHECK_THAT(refused(read_bytes(path)), Catch::Contains("no \"tapegrad.checksum\""));
  // Another model's file: every mismatch named.
  Generator gen(5);
  nn::Linear<double> other(4, 2, gen);
  train::save_model(path, other);
  CHECK_THAT(refused(read_bytes(path)), Catch::Contains("fc1.weight"));
}

TEST_CASE("load_checkpoint(path, model) loads the model of a training checkpoint without an optimizer", "[train]") {
  TempDir tmp;
  const std::string path = tmp.file("last.ckpt.safetensors");
  Net trained(1);
  optim::Adam<double> adam(trained.parameters());
  Generator sampler(3);
  {
    const auto [x, labels] = draw(sampler, 8);
    cross_entropy(trained.forward(x), labels).backward();
    adam.step();
  }
  train::save_checkpoint(path, trained, adam, 42, {{"note", "x"}}, {}, {{"sampler", &sampler}});

  Net fresh(2);
  CHECK(train::load_checkpoint(path, fresh) == 42);
  for (const auto& [name, tensor] : trained.state_dict()) {
    CHECK(xt::all(xt::equal(fresh.state_dict().at(name).data(), tensor.data())));
  }
  // The checksum still covers the optimizer's part of the file, which this load does not use.
  std::string bytes = read_bytes(path);
  std::size_t at = std::string::npos;
  for (const auto& [name, tensor] : adam.state_dict()) {
    if (tensor.data().size() == 0 || tensor.data().data()[0] == 0.0) continue;
    const double value = tensor.data().data()[0];
    at = bytes.find(std::string(reinterpret_cast<const char*>(&value), sizeof value));
    if (at != std::string::npos) break;
  }
  REQUIRE(at != std::string::npos);
  bytes[at] ^= 0x01;  // the lowest bit of an optimizer value
  write_bytes(tmp.path / "damaged.safetensors", bytes);
  Net target(5);
  CHECK_THROWS_WITH(train::load_checkpoint(tmp.file("damaged.safetensors"), target),
                    Catch::Contains("checksum mismatch"));

  // A resumed run restores its own generators too; a checkpoint without them is refused.
  Generator other(9);
  StateDict<double> no_extra;
  optim::Adam<double> adam2(fresh.parameters());
  train::load_checkpoint(path, fresh, adam2, no_extra, {{"sampler", &other}});
  CHECK(other.state().s[0] == sampler.state().s[0]);
  CHECK_THROWS_WITH(train::load_checkpoint(path, fresh, adam2, no_extra, {{"loader", &other}}),
                    Catch::Contains("missing \"rng.loader.state\""));
}

TEST_CASE("MetricsLog on --resume replaces the log atomically instead of truncating it in place", "[train]") {
  TempDir tmp;
  const fs::path path = tmp.path / "metrics.jsonl";
  {
    train::MetricsLog log(path, std::nullopt);
    for (int step = 1; step <= 6; ++step) log.write({{"step", step}, {"loss", 1.0 / step}});
  }
  std::ofstream(path, std::ios::app) << "{\"step\": 7, \"lo";  // cut short by a kill
  const std::string before = read_bytes(path);
  // A second name for the old file: a rewrite in place would change what it shows.
  fs::create_hard_link(path, tmp.path / "old.jsonl");
  {
    train::MetricsLog log(path, 4);
    log.write({{"step", 5}, {"loss", 0.5}});
  }
  CHECK(read_bytes(tmp.path / "old.jsonl") == before);
  const auto lines = train::read_metrics(path);
  REQUIRE(lines.size() == 5);
  CHECK(lines[3]["step"] == 4);
  CHECK(lines[4] == nlohmann::json({{"step", 5}, {"loss", 0.5}}));
  for (const auto& entry : fs::directory_iterator(tmp.path)) {
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  }

  // A resume killed during its rewrite left its temporary file, as large as the log: the next
  // resume removes it (they used to pile up, one per killed resume).
  const fs::path debris = tmp.path / fmt::format("metrics.jsonl.tmp.{}", testing::exited_pid());
  std::ofstream(debris) << read_bytes(path).substr(0, 20);
  { train::MetricsLog log(path, 5); }
  CHECK_FALSE(fs::exists(debris));
  CHECK(train::read_metrics(path).size() == 5);

  // A line nested 100,000 deep is skipped like a damaged one: kept, it was written back with dump(),
  // which overflowed the stack.
  std::ofstream(path, std::ios::app) << "{\"step\": 1, \"x\": " << std::string(100'000, '[')
                                     << std::string(100'000, ']') << "}\n";
  CHECK(train::read_metrics(path).size() == 5);
  { train::MetricsLog log(path, 5); }
  CHECK(train::read_metrics(path).size() == 5);
}

TEST_CASE("exit codes", "[train]") {
  std::ostringstream err;
  CHECK(train::exit_code_of("prog", err, [] { return 0; }) == 0);
  CHECK(train::exit_code_of("prog", err, []() -> int { throw train::UsageError("--lr -1 must be positive"); }) ==
        train::kUsageExitCode);
  CHECK(train::exit_code_of("prog", err, []() -> int { throw std::runtime_error("run/x: cannot open"); }) == 1);
  CHECK(err.str() == "prog: --lr -1 must be positive\nprog: run/x: cannot open\n");

  // A message quoting a whole untrusted input (a 10 MB line) is clipped line by line, and a list of
  // problems after 50 lines.
  CHECK(train::error_message("prog", "a\nb\n") == "prog: a\nb\n");
  CHECK(train::error_message("prog", "") == "prog: \n");
  const std::string long_line(10'000'000, 'x');
  CHECK(train::error_message("prog", "bad '" + long_line + "'") ==
        "prog: bad '" + std::string(1019, 'x') + "... (10000006 bytes)\n");
  std::string many;
  for (int i = 0; i < 120; ++i) many += fmt::format("problem {}\n", i);
  const std::string shown = train::error_message("prog", many);
  CHECK_THAT(shown,
             Catch::StartsWith("prog: problem 0\nproblem 1\n") && Catch::EndsWith("problem 49\n... (70 more lines)\n"));
  CHECK(train::kUsageExitCode == 2);
  CHECK(train::kInterruptedExitCode == 130);
}

TEST_CASE("Trainer: an interrupted run resumed from its checkpoint ends exactly as the uninterrupted one", "[train]") {
  TempDir whole_dir, cut_dir;
  const train::RunDirectory whole_run(whole_dir.path), cut_run(cut_dir.path);
  Run whole(1);
  const auto full = whole.train(whole_run, false);
  CHECK_FALSE(full.interrupted);
  CHECK(full.step == 12);
  // Validations after steps 3, 4 (epoch end), 6, 8 (epoch end), 9 and 12 (epoch end).
  std::vector<std::int64_t> steps;
  for (const auto& v : full.validations) steps.push_back(v.step);
  CHECK(steps == std::vector<std::int64_t>{3, 4, 6, 8, 9, 12});
  CHECK(full.logged_losses.size() == 6);  // every 2 steps, windows restarting at each epoch
  CHECK(full.best_step > 0);
  const auto lines = train::read_metrics(whole_run.metrics());
  CHECK(lines.size() == 6 + 6);
  CHECK(lines.back()["epoch"] == 3);
  CHECK(lines.back().contains("valid_acc"));
  CHECK(fs::exists(whole_run.model()));
  // The best model is the one scored best: its file's metadata names the step.
  Net best(7);
  CHECK(train::load_model(whole_run.model(), best).at("step") == std::to_string(full.best_step));

  // Stopped after step 7 (as Ctrl-C would): the checkpoint of step 6 stays; a fresh process resumes it.
  Run first(1);
  const auto cut = first.train(cut_run, false, [](std::int64_t step) { return step == 7; });
  CHECK(cut.interrupted);
  CHECK(cut.step == 7);
  CHECK(
      first.log.str().find(fmt::format("interrupted: stopped after step 7; the last complete checkpoint is {} (step 6)",
                                       cut_run.checkpoint().string())) != std::string::npos);
  Net probe(8);
  CHECK(train::load_checkpoint(cut_run.checkpoint().string(), probe) == 6);

  Run second(50);  // other initial weights and sampler: everything must come from the checkpoint
  const auto rest = second.train(cut_run, true);
  CHECK_FALSE(rest.interrupted);
  CHECK(rest.start_step == 6);
  CHECK(rest.step == 12);
  CHECK(rest.best_step == full.best_step);
  CHECK(values_of(cut_run.checkpoint()) == values_of(whole_run.checkpoint()));
  CHECK(read_bytes(cut_run.model()) == read_bytes(whole_run.model()));
  CHECK(metrics_without_timing(cut_run.metrics()) == metrics_without_timing(whole_run.metrics()));
}

TEST_CASE("Trainer: bad options are refused, and without validation every checkpoint keeps the latest model",
          "[train]") {
  Bare b;
  CHECK_THROWS_AS(b.trainer(), std::invalid_argument);  // no steps per epoch
  b.options.steps_per_epoch = 2;
  b.options.epochs = 2;
  b.options.log_every = 1;
  const auto result = b.trainer().run();
  REQUIRE(result.validations.size() == 2);
  CHECK(result.validations[0].best);
  CHECK(result.validations[1].best);
  CHECK(std::isnan(result.best_score));
  CHECK(result.best_step == 4);
  Net saved(2);
  train::load_model(b.run.model(), saved);
  CHECK(xt::all(xt::equal(saved.fc2->weight.data(), b.model.fc2->weight.data())));
  CHECK(train::read_metrics(b.run.metrics()).size() == 4 + 2);
}

TEST_CASE("Trainer: the model file and checkpoint record the run's config and own files, checked when read back",
          "[train]") {
  TempDir tmp;
  const train::RunDirectory run(tmp.path, {"vocab.txt"});
  run.start_new(false);
  run.write_config({{"width", 8}});
  write_bytes(run.file("vocab.txt"), "<pad>\n<unk>\nthe\n");
  Run first(1);
  first.train(run, false, [](std::int64_t step) { return step == 4; });
  for (const fs::path& recorded_in : {run.model(), run.checkpoint()}) {
    const auto metadata = st::File(recorded_in.string()).metadata();
    CHECK(metadata.count("file.config.json") == 1);
    CHECK(metadata.count("file.vocab.txt") == 1);
    CHECK_NOTHROW(run.check_files(recorded_in));
  }
  CHECK(run.file_digests() == run.file_digests());

  // One changed byte of the vocabulary: reading the run back, and resuming it, name the file.
  const std::string vocab = read_bytes(run.file("vocab.txt"));
  write_bytes(run.file("vocab.txt"), "<pad>\n<unk>\nthd\n");
  CHECK_THROWS_WITH(run.check_files(run.model()),
                    Catch::Contains(run.file("vocab.txt").string()) && Catch::Contains("changed or damaged"));
  Run second(1);
  CHECK_THROWS_WITH(second.train(run, true), Catch::Contains("vocab.txt: changed or damaged"));
  write_bytes(run.file("vocab.txt"), vocab);
  // A config edited by hand (a key added) is refused the same way; a missing one too.
  const std::string config = read_bytes(run.config());
  write_bytes(run.config(), config + " ");
  CHECK_THROWS_WITH(run.check_files(run.checkpoint()), Catch::Contains("config.json: changed or damaged"));
  fs::remove(run.config());
  CHECK_THROWS_WITH(run.check_files(run.checkpoint()), Catch::Contains("config.json: missing or unreadable"));
  write_bytes(run.config(), config);
  Run third(1);
  CHECK_NOTHROW(third.train(run, true));

  // The trainer's entries of the checkpoint's metadata are read strictly too: a best_metrics nested
  // 100,000 deep (the checksum is no secret) was accepted and overflowed the stack when written back.
  for (const std::string& bad : {std::string(100'000, '[') + std::string(100'000, ']'), std::string("[1]")}) {
    const st::File file(run.checkpoint().string());
    std::vector<std::string> problems;
    const auto tensors = train::views_of(file, problems);
    st::Metadata metadata = file.metadata();
    metadata.erase(train::kChecksumKey);
    metadata["trainer.best_metrics"] = bad;
    metadata[train::kChecksumKey] = train::checksum(tensors, metadata);
    st::save_file(run.checkpoint().string(), tensors, metadata);
    Run fourth(1);
    CHECK_THROWS_WITH(fourth.train(run, true), Catch::Contains("not a checkpoint of train::Trainer"));
  }
}

TEST_CASE("Trainer: a non-finite loss stops the run before the step, keeping the model and the checkpoint", "[train]") {
  // An infinity fed at one step: the loss is NaN.
  const auto infinity_at = [](Bare& b, std::int64_t bad_step) {
    b.options.steps_per_epoch = 3;
    b.options.epochs = 2;
    b.hooks.forward = [&b, bad_step](std::int64_t step, std::int64_t, const train::MicroBatch&) {
      auto [x, labels] = draw(b.data, 4);
      if (step == bad_step) x.mutable_data()(0, 0) = std::numeric_limits<double>::infinity();
      return loss_on(b.model, x, labels);
    };
  };
  Bare b;
  infinity_at(b, 4);  // the second epoch's first step
  xt::xarray<double> after_last_step;
  b.hooks.after_step = [&] { after_last_step = b.model.fc1->weight.data(); };
  CHECK_THROWS_WITH(b.trainer().run(), Catch::Contains("the training loss is nan at step 5 (epoch 2)"));
  Net saved(2);
  CHECK(train::load_checkpoint(b.run.checkpoint().string(), saved) == 3);
  // The model is the one of step 4: the bad step changed nothing.
  CHECK(xt::all(xt::equal(b.model.fc1->weight.data(), after_last_step)));

  // With anomaly detection on, the op that made the NaN is named instead.
  Bare checked;
  infinity_at(checked, 1);
  checked.options.detect_anomaly = true;
  CHECK_THROWS_AS(checked.trainer().run(), AnomalyError);
  CHECK_FALSE(is_anomaly_enabled());
}

TEST_CASE("Trainer: a step that leaves NaN weights behind a finite loss stops before validating and saving",
          "[train]") {
  // An update can overflow (or divide 0 by 0, as Adam with eps 0 on a zero gradient) while the loss it
  // came from was finite. Validated, those weights scored NaN, counted as the best, and were saved over
  // the last good model and checkpoint as files that no load accepts.
  Bare b;
  b.options.steps_per_epoch = 3;
  b.options.epochs = 2;
  std::int64_t steps = 0;
  b.hooks.after_step = [&] {
    if (++steps == 6) b.model.fc2->bias.mutable_data()(1) = std::numeric_limits<double>::quiet_NaN();
  };
  b.hooks.validate = [&] {
    train::Evaluation e;
    const Tensor<double> logits = b.model.forward(Tensor<double>::ones({2, 4}));
    e.score = -static_cast<double>(logits.data()(0, 0));  // NaN once the bias is
    return e;
  };
  CHECK_THROWS_WITH(b.trainer().run(),
                    Catch::Contains("after step 6 the model's \"fc2.bias\" holds nan at flat index 1; "
                                    "stopped before validating and saving it, the last checkpoint "
                                    "(step 3) is kept"));
  Net saved(2);
  CHECK(train::load_checkpoint(b.run.checkpoint().string(), saved) == 3);
  CHECK(train::load_model(b.run.model(), saved).at("step") == "3");
}

TEST_CASE("Trainer: a validation whose outputs are not finite stops the run naming the step and what is kept",
          "[train]") {
  // The messages name the checkpoint a run can resume from, and never one that does not exist.
  const auto diverging_at = [](Bare& b, int bad_validation) {
    b.options.steps_per_epoch = 3;
    b.options.epochs = 2;
    b.hooks.validate = [bad_validation, count = 0]() mutable {
      if (++count == bad_validation) throw train::NonFiniteValidation("the validation logits are not finite");
      return train::Evaluation{};
    };
  };
  Bare first;
  diverging_at(first, 1);
  CHECK_THROWS_WITH(first.trainer().run(),
                    "the validation logits are not finite at the validation after step 3 (epoch 1); stopped without "
                    "saving, there is no checkpoint yet (a smaller learning rate or clipping may help)");
  CHECK_FALSE(std::filesystem::exists(first.run.checkpoint()));
  Bare second;
  diverging_at(second, 2);
  CHECK_THROWS_WITH(second.trainer().run(), Catch::Contains("at the validation after step 6 (epoch 2); stopped without "
                                                            "saving, the last checkpoint (step 3) is kept"));
  Net saved(2);
  CHECK(train::load_checkpoint(second.run.checkpoint().string(), saved) == 3);
}

TEST_CASE("divergence_suspects names the extreme optimizer settings, and a diverged run's message carries them",
          "[train]") {
  Net net(1);
  // Settings that train stably name nothing, gradient clipping off included.
  CHECK(train::divergence_suspects(optim::Adam<double>(net.parameters()), 0.0).empty());
  CHECK(train::divergence_suspects(optim::AdamW<double>(net.parameters()), 0.0).empty());
  CHECK(train::divergence_suspects(optim::SGD<double>(net.parameters(), optim::SGDOptions{1.0}), 0.0).empty());
  CHECK(train::divergence_suspects(optim::RMSprop<double>(net.parameters()), 0.0).empty());
  CHECK(train::divergence_suspects(optim::Adagrad<double>(net.parameters()), 0.0).empty());
  optim::AdamOptions adam{1000.0, {0.9, 0.0}, 1.0};
  CHECK(train::divergence_suspects(optim::Adam<double>(net.parameters(), adam), 0.0) ==
        "likely to blame: lr 1000 (above 0.1), beta2 0 (below 0.9), eps 1 (above 0.1: lr then scales the raw "
        "gradient), gradient clipping off");
  CHECK(train::divergence_suspects(optim::Adam<double>(net.parameters(), adam), 1.0) ==
        "likely to blame: lr 1000 (above 0.1), beta2 0 (below 0.9), eps 1 (above 0.1: lr then scales the raw "
        "gradient)");
  CHECK(train::divergence_suspects(
            optim::AdamW<double>(net.parameters(), optim::AdamWOptions{0.01, {0.9, 0.999}, 1e-30, 50.0}), 1.0) ==
        "likely to blame: eps 1e-30 (below 1e-12), weight_decay 50 (lr * weight_decay 0.5 above 0.1)");
  CHECK(
      train::divergence_suspects(optim::SGD<double>(net.parameters(), optim::SGDOptions{1000.0, 0.0, 0.0, 5.0}), 0.0) ==
      "likely to blame: lr 1000 (above 10), weight_decay 5 (above 1), gradient "
      "clipping off");
  CHECK(train::divergence_suspects(optim::RMSprop<double>(net.parameters(), optim::RMSpropOptions{0.01, 0.5}), 0.0) ==
        "likely to blame: alpha 0.5 (below 0.9), gradient clipping off");

  // Through an optimizer that updates with another (as distributed::ZeroRedundancyOptimizer does), the
  // settings named are the inner one's.
  struct Wrapping : optim::Optimizer<double> {
    explicit Wrapping(std::unique_ptr<optim::Optimizer<double>> inner)
        : optim::Optimizer<double>(inner->params(), inner->lr()), inner(std::move(inner)) {}
    void step() override { inner->step(); }
    const optim::Optimizer<double>* wrapped() const override { return inner.get(); }
    std::vector<std::string> buffer_names() const override { return {}; }
    bool counts_steps() const override { return false; }
    const char* name() const override { return "Wrapping"; }
    std::unique_ptr<optim::Optimizer<double>> inner;
  };
  const Wrapping wrapping(
      std::make_unique<optim::AdamW<double>>(net.parameters(), optim::AdamWOptions{0.01, {0.9, 0.999}, 1e-8, 50.0}));
  CHECK(train::divergence_suspects(wrapping, 1.0) ==
        "likely to blame: weight_decay 50 (lr * weight_decay 0.5 above 0.1)");

  // A run that diverges with them says so, after what is kept.
  Bare b;
  optim::Adam<double> wild(b.model.parameters(), optim::AdamOptions{0.01, {0.9, 0.5}});
  b.options.steps_per_epoch = 2;
  b.hooks.forward = [&b](std::int64_t, std::int64_t, const train::MicroBatch&) {
    auto [x, labels] = draw(b.data, 4);
    x.mutable_data()(0, 0) = std::numeric_limits<double>::infinity();
    return loss_on(b.model, x, labels);
  };
  train::Trainer<double> trainer(b.run, b.model, wild, b.options, b.hooks, b.progress);
  CHECK_THROWS_WITH(trainer.run(),
                    "the training loss is nan at step 1 (epoch 1); stopped without updating the model, "
                    "there is no checkpoint yet; likely to blame: beta2 0.5 (below 0.9), gradient "
                    "clipping off (anomaly detection names the op that produced it)");
}

TEST_CASE("Trainer: autocast covers the forward, the backward and validation, and nothing else", "[train]") {
  // What each part of a step saw, in order: f(orward), b(ackward, a parameter's gradient hook), s(tep
  // done), v(alidate), e(poch begun); upper case under autocast.
  const auto record = [](Bare& b) {
    auto seen = std::make_shared<std::string>();
    const auto mark = [seen](char c) { seen->push_back(is_autocast_enabled() ? char(std::toupper(c)) : c); };
    b.options.steps_per_epoch = 2;
    b.hooks.begin_epoch = [mark](std::int64_t) { mark('e'); };
    b.hooks.forward = [&b, mark](std::int64_t, std::int64_t, const train::MicroBatch&) {
      mark('f');
      const auto [x, labels] = draw(b.data, 4);
      return loss_on(b.model, x, labels);
    };
    b.model.fc1->weight.register_post_accumulate_grad_hook([mark](Tensor<double>&) { mark('b'); });
    b.hooks.after_step = [mark] { mark('s'); };
    b.hooks.validate = [mark] {
      mark('v');
      return train::Evaluation{};
    };
    return seen;
  };
  Bare plain;
  const auto plain_seen = record(plain);
  plain.trainer().run();
  CHECK(*plain_seen == "efbsfbsv");

  Bare mixed;
  mixed.options.autocast = true;
  const auto mixed_seen = record(mixed);
  mixed.trainer().run();
  CHECK(*mixed_seen == "eFBsFBsV");
  CHECK_FALSE(is_autocast_enabled());

  // Off, it leaves a caller's scope alone.
  Bare outer;
  const auto outer_seen = record(outer);
  {
    const autocast scope;
    outer.trainer().run();
  }
  CHECK(*outer_seen == "EFBSFBSV");
}

TEST_CASE("Trainer: a rank other than 0 trains without writing files and logs the sums over the ranks", "[train]") {
  TempDir tmp;
  const train::RunDirectory run(tmp.path);
  Run rank1(1);
  // Two identical ranks, simulated: every sum doubles, which leaves the means (loss, accuracy) as they are.
  int reductions = 0, synchronizations = 0;
  train::TrainerOptions options;
  options.epochs = 1;
  options.steps_per_epoch = 3;
  options.schedule = [](std::int64_t) { return 0.05; };
  options.log_every = 1;
  train::TrainerHooks<double> hooks;
  Generator data(4);
  hooks.forward = [&](std::int64_t, std::int64_t, const train::MicroBatch&) {
    const auto [x, labels] = draw(data, 4);
    auto out = loss_on(rank1.model, x, labels);
    out.tokens = 4;
    return out;
  };
  hooks.replicas.rank = 1;
  hooks.replicas.size = 2;
  hooks.replicas.synchronize_gradients = [&] { ++synchronizations; };
  hooks.replicas.all_reduce_sum = [&](std::vector<double>& values) {
    ++reductions;
    for (double& v : values) v *= 2;
  };
  train::Trainer<double> trainer(run, rank1.model, rank1.optimizer, options, hooks, rank1.progress);
  const auto result = trainer.run();
  CHECK(result.step == 3);
  CHECK(synchronizations == 3);
  CHECK(reductions == 3 + 1);           // each step's sums, and the validation's stop vote at the epoch's end
  CHECK(result.train_tokens == 3 * 8);  // the global batch's tokens
  CHECK(run.existing_files().empty());
  CHECK_THROWS_AS(trainer.metrics(), std::logic_error);
}

TEST_CASE("Trainer: a validation stopped by Ctrl-C on another rank stops this one too", "[train]") {
  TempDir tmp;
  const train::RunDirectory run(tmp.path);
  Run rank1(1);
  train::TrainerOptions options;
  options.epochs = 1;
  options.steps_per_epoch = 6;
  options.eval_every = 2;
  options.schedule = [](std::int64_t) { return 0.05; };
  train::TrainerHooks<double> hooks;
  Generator data(4);
  hooks.forward = [&](std::int64_t, std::int64_t, const train::MicroBatch&) {
    const auto [x, labels] = draw(data, 4);
    return loss_on(rank1.model, x, labels);
  };
  int validations = 0;
  hooks.validate = [&] {
    ++validations;
    train::Evaluation e;
    e.score = 0.5;  // this rank's validation always completes
    return e;
  };
  // Rank 0, simulated: its validation after step 4 is interrupted, which it reports in the one-value
  // vote that follows every validation; the step sums it contributes are this rank's own.
  std::vector<std::size_t> votes;
  hooks.replicas.rank = 1;
  hooks.replicas.size = 2;
  hooks.replicas.synchronize_gradients = [] {};
  hooks.replicas.all_reduce_sum = [&](std::vector<double>& values) {
    if (values.size() == 1) {
      votes.push_back(values.size());
      values[0] += votes.size() == 2 ? 1.0 : 0.0;
    } else {
      for (double& v : values) v *= 2;
    }
  };
  train::Trainer<double> trainer(run, rank1.model, rank1.optimizer, options, hooks, rank1.progress);
  const auto result = trainer.run();
  CHECK(result.interrupted);
  CHECK(result.step == 4);  // stopped at the second validation, as rank 0 did, not after step 6
  CHECK(validations == 2);
  CHECK(votes.size() == 2);
}

TEST_CASE("shard gives each rank every N-th element, padding with the first ones", "[train]") {
  const std::vector<std::size_t> five = {10, 11, 12, 13, 14};
  CHECK(train::shard(five, 2, 0) == std::vector<std::size_t>{10, 12, 14});
  CHECK(train::shard(five, 2, 1) == std::vector<std::size_t>{11, 13, 10});
  CHECK(train::shard(five, 2, 1, true) == std::vector<std::size_t>{11, 13});
  CHECK(train::shard({}, 3, 2).empty());
  CHECK_THROWS_AS(train::shard(five, 2, 2), std::invalid_argument);
}

TEST_CASE("rank_rows puts each row of a batch on one rank, none on a rank when they are fewer", "[train]") {
  const std::vector<std::size_t> five = {10, 11, 12, 13, 14};
  CHECK(train::rank_rows(five, 3, 0) == std::vector<std::size_t>{10, 13});
  CHECK(train::rank_rows(five, 3, 2) == std::vector<std::size_t>{12});
  CHECK(train::rank_rows(five, 6, 5).empty());
  CHECK_THROWS_AS(train::rank_rows(five, 3, 3), std::invalid_argument);
  // The loss of a rank without rows: backward accepts it.
  const auto zero = train::empty_share_loss<float>();
  CHECK_NOTHROW(zero.backward());
  CHECK(zero.item() == 0.0f);
}
