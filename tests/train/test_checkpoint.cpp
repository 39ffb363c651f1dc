// Training checkpoints of a whole model: a run interrupted, saved and resumed in a fresh process-like
// setup (new model and optimizer from another seed) continues bit for bit as the uninterrupted run,
// dropout masks included; a truncated or corrupted checkpoint is refused and changes nothing.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/optim/optim.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/checksum.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
namespace st = tapegrad::io::safetensors;
namespace fs = std::filesystem;

using tapegrad::testing::TempDir;

namespace {

// A fresh directory, removed with its contents at the end of the test.
struct Batch {
  xt::xarray<std::int64_t> ids;
  BoolArray padding;
  IndexArray labels;
};

constexpr std::size_t kVocab = 16, kBatch = 4, kLen = 6, kClasses = 3;
constexpr double kMaxNorm = 0.5;

// Fixed random batches: sequences of 2 to kLen real tokens, then padding (id 0).
std::vector<Batch> make_batches(std::size_t n) {
  Generator gen(2024);
  std::vector<Batch> out;
  for (std::size_t b = 0; b < n; ++b) {
    Batch batch{xt::zeros<std::int64_t>({kBatch, kLen}), xt::ones<bool>({kBatch, kLen}),
                xt::zeros<std::int64_t>({kBatch})};
    for (std::size_t i = 0; i < kBatch; ++i) {
      const std::size_t len = 2 + gen.randint(kLen - 1);
      for (std::size_t j = 0; j < len; ++j) {
        batch.ids(i, j) = static_cast<std::int64_t>(1 + gen.randint(kVocab - 1));
        batch.padding(i, j) = false;
      }
      batch.labels(i) = static_cast<std::int64_t>(gen.randint(kClasses));
    }
    out.push_back(std::move(batch));
  }
  return out;
}

models::TransformerClassifierOptions tiny_options() {
  auto o = testing::sized<models::TransformerClassifierOptions>(kVocab, 8, 8, 2, 2);
  o.dim_feedforward = 16;
  o.dropout = 0.2;
  o.attention_dropout = 0.2;
  o.num_classes = kClasses;
  return o;
}

optim::AdamWOptions adamw_options() {
  optim::AdamWOptions o;
  o.weight_decay = 0.05;
  return o;
}

// A model and its optimizer, initialized from seed; step() is one training step in train mode
// (dropout on) with label smoothing, clip_grad_norm_ and a warmup-then-cosine learning rate.
struct Trainer {
  Generator gen;
  models::TransformerClassifier<float> model;
  optim::AdamW<float> opt;
  optim::CosineDecay schedule{0.01, 10, 3};

  explicit Trainer(std::uint64_t seed)
      : gen(seed), model(tiny_options(), gen), opt(model.parameters(), adamw_options()) {}

  // The loss before the update, and clip_grad_norm_'s total norm.
  std::pair<float, double> step(std::int64_t step, const Batch& batch) {
    model.train();
    opt.zero_grad();
    CrossEntropyOptions ce;
    ce.label_smoothing = 0.1;
    const Tensor<float> loss = cross_entropy(model.forward(batch.ids, batch.padding), batch.labels, ce);
    loss.backward();
    const double norm = optim::clip_grad_norm_(model.parameters(), kMaxNorm);
    opt.set_lr(schedule(step));
    opt.step();
    return {loss.item(), norm};
  }
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Copies of everything loading may change: parameter values, optimizer state, generator states.
struct Snapshot {
  std::vector<xt::xarray<float>> values;
  std::vector<std::pair<std::string, xt::xarray<float>>> optimizer;
  std::vector<Generator::State> generators;

  explicit Snapshot(const Trainer& t) {
    for (const auto& [name, tensor] : t.model.state_dict()) values.push_back(tensor.data());
    for (const auto& [name, tensor] : t.opt.state_dict()) optimizer.emplace_back(name, tensor.data());
    for (const auto& [name, gen] : t.model.named_generators()) generators.push_back(gen->state());
  }
  bool operator==(const Snapshot& o) const {
    if (values != o.values || optimizer != o.optimizer || generators.size() != o.generators.size()) return false;
    for (std::size_t k = 0; k < generators.size(); ++k) {
      const auto &a = generators[k], &b = o.generators[k];
      if (a.s != b.s || a.has_spare_normal != b.has_spare_normal || !(a.spare_normal == b.spare_normal)) return false;
    }
    return true;
  }
};

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("a TransformerClassifier run resumed from a checkpoint repeats the uninterrupted losses bit for bit",
          "[io]") {
  const auto batches = make_batches(10);
  std::vector<float> uninterrupted;
  std::size_t clipped = 0;
  {
    Trainer a(42);
    for (std::int64_t s = 1; s <= 10; ++s) {
      const auto [loss, norm] = a.step(s, batches[s - 1]);
      uninterrupted.push_back(loss);
      clipped += norm > kMaxNorm;
    }
  }
  CHECK(clipped > 0);  // clip_grad_norm_ really changes gradients in this run

  TempDir dir;
  const auto path = dir.file("ckpt.safetensors");
  {
    Trainer b(42);
    for (std::int64_t s = 1; s <= 4; ++s) {
      INFO("step " << s);
      CHECK(same_bits(b.step(s, batches[s - 1]).first, uninterrupted[s - 1]));
    }
    train::save_checkpoint(path, b.model, b.opt, 4, {{"run", "resume test"}});
  }
  // Every dropout mask of the model is drawn from its one generator, which the checkpoint holds.
  REQUIRE(io::safetensors::File(path).contains("generator.dropout_generator.state"));

  Trainer c(7);  // another initialization and another dropout stream, all replaced by the checkpoint
  const std::int64_t step = train::load_checkpoint(path, c.model, c.opt);
  REQUIRE(step == 4);
  for (std::int64_t s = step + 1; s <= 10; ++s) {
    const float loss = c.step(s, batches[s - 1]).first;
    INFO("step " << s << ": resumed " << loss << ", uninterrupted " << uninterrupted[s - 1]);
    CHECK(same_bits(loss, uninterrupted[s - 1]));
  }

  // The dropout stream matters: resuming everything but the generator's state gives other losses.
  Trainer d(7);
  train::load_checkpoint(path, d.model, d.opt);
  d.model.dropout_generator()->manual_seed(123);
  CHECK_FALSE(same_bits(d.step(5, batches[4]).first, uninterrupted[4]));
}

TEST_CASE("a checkpoint carries extra state such as an ExponentialMovingAverage, checked like the rest", "[io]") {
  const auto batches = make_batches(6);
  TempDir dir;
  const auto path = dir.file("ckpt.safetensors");
  Trainer a(42);
  optim::ExponentialMovingAverage<float> ema_a(a.model.parameters(), 0.9);
  for (std::int64_t s = 1; s <= 3; ++s) {
    a.step(s, batches[s - 1]);
    ema_a.update();
  }
  train::save_checkpoint(path, a.model, a.opt, 3, {}, ema_a.state_dict());

  Trainer b(7);
  optim::ExponentialMovingAverage<float> ema_b(b.model.parameters(), 0.9);
  StateDict<float> extra = ema_b.state_dict();
  REQUIRE(train::load_checkpoint(path, b.model, b.opt, extra) == 3);
  ema_b.load_state_dict(extra);
  for (std::int64_t s = 4; s <= 6; ++s) {
    a.step(s, batches[s - 1]);
    ema_a.update();
    b.step(s, batches[s - 1]);
    ema_b.update();
  }
  CHECK(ema_b.num_updates() == 6);
  for (const auto& [name, tensor] : ema_a.state_dict()) {
    INFO(name);
    CHECK(tensor.data() == ema_b.state_dict().at(name).data());
  }

  // Without a place for the extra state, or with one of another shape, nothing is loaded.
  Trainer c(5);
  const Snapshot before(c);
  std::string message;
  try {
    train::load_checkpoint(path, c.model, c.opt);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::StartsWith(path) && Catch::Contains("unexpected \"extra.shadow.0\""));
  StateDict<float> wrong = ema_b.state_dict();
  wrong["shadow.0"] = Tensor<float>::from_vector({1.0f}, {1});
  message.clear();
  try {
    train::load_checkpoint(path, c.model, c.opt, wrong);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("shadow.0"));
  CHECK(Snapshot(c) == before);
}

TEST_CASE("a checkpoint written before saving from views still verifies and loads", "[io]") {
  // The fuzz corpus's seed (commit 3e8546f), written when the checksum hashed copies of the tensors:
  // a Linear(3, 2) from Generator(7) after one Adam step on a fixed batch, at step 1.
  const fs::path seed = fs::path(TAPEGRAD_TEST_DATA_DIR) / "../fuzz/corpus/checkpoint/linear_adam.safetensors";
  REQUIRE(fs::exists(seed));
  Generator gen(7);
  nn::Linear<float> model(3, 2, gen);
  optim::Adam<float> optimizer(model.parameters());
  sum(model.forward(Tensor<float>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}))).backward();
  optimizer.step();
  const auto expected = model.weight.data();
  model.weight.mutable_data().fill(0.0F);
  CHECK(train::load_checkpoint(seed.string(), model, optimizer) == 1);
  CHECK(model.weight.data() == expected);
  // And the same state saved today gives the same checksum.
  TempDir dir;
  const auto again = dir.file("again.safetensors");
  train::save_checkpoint(again, model, optimizer, 1, {{"note", "seed"}});
  CHECK(st::File(again).metadata().at(train::kChecksumKey) ==
        st::File(seed.string()).metadata().at(train::kChecksumKey));
}

TEST_CASE("a truncated or corrupted checkpoint is refused with a clear error and changes nothing", "[io]") {
  TempDir dir;
  const auto path = dir.file("ckpt.safetensors");
  const auto batches = make_batches(2);
  {
    Trainer t(42);
    t.step(1, batches[0]);
    t.step(2, batches[1]);
    train::save_checkpoint(path, t.model, t.opt, 2);
  }
  const std::vector<char> good = read_bytes(path);
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, good.data(), 8);
  REQUIRE(8 + header_len < good.size());

  Trainer target(5);
  target.step(1, batches[0]);  // some optimizer state to keep, too
  const Snapshot before(target);
  const auto bad = dir.file("bad.safetensors");
  const auto refused = [&](const std::vector<char>& bytes, const std::string& what) {
    write_bytes(bad, bytes);
    std::string message;
    try {
      train::load_checkpoint(bad, target.model, target.opt);
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    INFO(what << ": " << message);
    CHECK_THAT(message, Catch::StartsWith(bad));
    return message;
  };

  SECTION("truncated") {
    for (std::size_t size : {std::size_t(0), std::size_t(7), std::size_t(8), std::size_t(8 + header_len / 2),
                             std::size_t(8 + header_len), good.size() / 2, good.size() - 1}) {
      refused(std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)),
              "truncated to " + std::to_string(size) + " bytes");
    }
    CHECK_THAT(refused(std::vector<char>(good.begin(), good.end() - 1), "one byte short"), Catch::Contains("data"));
  }
  SECTION("one flipped bit anywhere") {
    // Bit 0 of bytes spread over the header (length, JSON, metadata, padding) and the tensor data
    // (strides prime to the 4- and 8-byte elements), the last bytes (the BOOL entries), and a digit
    // of the stored checksum itself.
    std::vector<std::size_t> positions;
    for (std::size_t i = 0; i < 8 + header_len; i += 29) positions.push_back(i);
    for (std::size_t i = 8 + header_len; i < good.size(); i += 53) positions.push_back(i);
    for (std::size_t i = good.size() - 16; i < good.size(); ++i) positions.push_back(i);
    const std::string header(good.data() + 8, header_len);
    const auto at = header.find("\"tapegrad.checksum\":\"");
    REQUIRE(at != std::string::npos);
    positions.push_back(8 + at + 25);
    for (std::size_t i : positions) {
      auto bytes = good;
      bytes[i] = static_cast<char>(bytes[i] ^ 1);
      refused(bytes, "bit 0 of byte " + std::to_string(i) + " flipped");
    }
    // A changed parameter value is caught by the checksum alone, named as such.
    auto bytes = good;
    bytes[8 + header_len + 1] = static_cast<char>(bytes[8 + header_len + 1] ^ 0x40);
    CHECK_THAT(refused(bytes, "a data byte"), Catch::Contains("checksum mismatch") && Catch::Contains("corrupted"));
  }
  CHECK(Snapshot(target) == before);

  // The intact file loads, and then the model does change: the comparison above can fail.
  CHECK(train::load_checkpoint(path, target.model, target.opt) == 2);
  CHECK_FALSE(Snapshot(target) == before);
}

namespace {

struct Run {
  Tensor<float> weight = Tensor<float>::zeros({2, 3}, true);
  Tensor<float> bias = Tensor<float>::zeros({3}, true);
  StateDict<float> model() { return {{"weight", weight}, {"bias", bias}}; }
};

// One training step with random "gradients" from gen, under a schedule.
void train_step(Run& run, optim::Optimizer<float>& opt, Generator& gen, std::int64_t step) {
  run.weight.set_grad(Tensor<float>::normal({2, 3}, 0.0f, 1.0f, gen).data());
  run.bias.set_grad(Tensor<float>::normal({3}, 0.0f, 1.0f, gen).data());
  opt.set_lr(optim::LinearWarmup(0.1, 4)(step));
  opt.step();
  opt.zero_grad();
}

}  // namespace

TEST_CASE("a training checkpoint resumes exactly", "[io]") {
  TempDir dir;
  const auto path = dir.file("ckpt.safetensors");
  Run a;
  Generator gen_a(123);
  a.weight.mutable_data() = Tensor<float>::normal({2, 3}, 0.0f, 1.0f, gen_a).data();
  optim::AdamW<float> opt_a({a.weight, a.bias}, optim::AdamWOptions{0.1});
  for (std::int64_t s = 1; s <= 3; ++s) train_step(a, opt_a, gen_a, s);
  REQUIRE(gen_a.state().has_spare_normal);  // 9 normals: the spare is part of the state
  train::save_checkpoint(path, a.model(), opt_a, 3, gen_a, {{"run", "test"}});
  for (std::int64_t s = 4; s <= 6; ++s) train_step(a, opt_a, gen_a, s);

  const st::File file(path);
  CHECK(file.metadata().at("run") == "test");
  CHECK(file.contains("model.weight"));
  CHECK(file.contains("optimizer.state.0.exp_avg"));
  CHECK(file.contains("optimizer.param_groups.0.lr"));
  CHECK(file.dtype("generator.state") == st::Dtype::U64);

  Run b;
  Generator gen_b(999);
  optim::AdamW<float> opt_b({b.weight, b.bias}, optim::AdamWOptions{0.1});
  StateDict<float> model_b = b.model();
  const std::int64_t step = train::load_checkpoint(path, model_b, opt_b, gen_b);
  CHECK(step == 3);
  for (std::int64_t s = step + 1; s <= 6; ++s) train_step(b, opt_b, gen_b, s);
  CHECK(b.weight.data() == a.weight.data());
  CHECK(b.bias.data() == a.bias.data());
  CHECK(gen_b.next_u64() == gen_a.next_u64());
  CHECK(opt_b.state_dict().at("state.0.step").item() == 6.0f);
}

TEST_CASE("loading a mismatched checkpoint reports every problem and changes nothing", "[io]") {
  TempDir dir;
  const auto path = dir.file("ckpt.safetensors");
  Run a;
  Generator gen(1);
  optim::Adam<float> opt({a.weight, a.bias});
  train_step(a, opt, gen, 1);
  train::save_checkpoint(path, a.model(), opt, 1, gen);

  auto weight = Tensor<float>::zeros({3, 2}, true);
  auto other = Tensor<float>::zeros({1}, true);
  StateDict<float> model{{"weight", weight}, {"other", other}};
  optim::Adam<float> opt2({weight, other});
  Generator gen2(5);
  const auto gen2_before = gen2.state();
  try {
    train::load_checkpoint(path, model, opt2, gen2);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::StartsWith(path));
    CHECK_THAT(m, Catch::Contains("\"model.weight\" has shape [2, 3] in the file, [3, 2] in the model"));
    CHECK_THAT(m, Catch::Contains("unexpected \"model.bias\""));
    CHECK_THAT(m, Catch::Contains("missing \"model.other\""));
  }
  CHECK(weight.data() == xt::xarray<float>(xt::zeros<float>({3, 2})));
  CHECK(gen2.state().s == gen2_before.s);
  CHECK(opt2.state_dict().size() == 1);  // only the lr: no state was loaded

  // The optimizer state is checked too, before the model changes: params of a different shape.
  Run c;
  auto big = Tensor<float>::zeros({4}, true);
  optim::Adam<float> opt3({c.weight, big});
  Generator gen3;
  StateDict<float> model3 = c.model();
  CHECK_THROWS_WITH(train::load_checkpoint(path, model3, opt3, gen3),
                    Catch::Contains("optimizer state") && Catch::Contains("\"state.1.exp_avg\" has shape [3]"));
  CHECK(c.weight.data() == xt::xarray<float>(xt::zeros<float>({2, 3})));
}
