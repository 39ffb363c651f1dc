// tapegrad's side of the benchmarks against PyTorch: runs ONE case per process (so the process's
// peak RSS belongs to that case) and prints one JSON line; benchmarks/run.sh drives it.
//
//   bench_tapegrad <case> <threads> [fp32|bf16]
//   bench_tapegrad --machine
//   bench_tapegrad --ops
//   bench_tapegrad --interleave <train_large|train_large_2k|train_large_8k> <steps> <threads>
//
// bf16 runs the case's products under tapegrad::autocast (the optimizer outside it), as torch's side
// runs under torch.autocast("cpu", dtype=torch.bfloat16); gemm_2048 in bf16 multiplies bfloat16
// operands (the kernel's ceiling). --machine prints the machine line as JSON.
// The cases, their shapes and their inputs mirror benchmarks/bench_torch.py exactly. The per-op cases
// come from the op table (tests/autograd/op_registry.cpp): "op:<entry>" times an entry's forward and
// backward at its benchmark shapes, and the torch-side names below are entries of it; --ops lists them.
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/blas.hpp"
#include "tapegrad/autograd/caching_allocator.hpp"
#include "tapegrad/autograd/machine.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/nn/attention.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tests/autograd/op_registry.hpp"

using namespace tapegrad;

namespace {

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

using Clock = std::chrono::steady_clock;

// User and system CPU time of the process, in ms.
void cpu_ms(double& user, double& sys) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  user = u.ru_utime.tv_sec * 1e3 + u.ru_utime.tv_usec / 1e3;
  sys = u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec / 1e3;
}
// CPU time per timed repetition (user, system), over the repetitions measure() timed.
double g_user_per_call = 0, g_sys_per_call = 0;

double time_ms(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Warmup (two calls, or one when a call takes over a second), then as many repetitions as fit a
// ~budget_ms budget, clamped to [min_reps, max_reps].
std::vector<double> measure(const std::function<void()>& f, double budget_ms = 2500, int min_reps = 5,
                            int max_reps = 30) {
  double first = time_ms(f);
  if (first < 1000) first = std::min(first, time_ms(f));
  const int reps = std::clamp(static_cast<int>(budget_ms / std::max(first, 1e-3)), min_reps, max_reps);
  std::vector<double> t;
  double u0, s0, u1, s1;
  cpu_ms(u0, s0);
  for (int i = 0; i < reps; ++i) t.push_back(time_ms(f));
  cpu_ms(u1, s1);
  g_user_per_call = (u1 - u0) / reps;
  g_sys_per_call = (s1 - s0) / reps;
  return t;
}

// Deterministic inputs shared with bench_torch.py: the same formulas on both sides.
std::vector<float> pattern(std::size_t n, std::uint64_t salt) {
  std::vector<float> v(n);
  std::uint64_t s = 0x9e3779b97f4a7c15ULL ^ salt;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ULL << 24) * 2.0 - 1.0);
  }
  return v;
}

TensorF input(const Shape& shape, std::uint64_t salt, bool requires_grad) {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return TensorF::from_vector(pattern(n, salt), shape, requires_grad);
}

// Token ids and padding: sequence b has length L/2 + (37 b) mod (L/2 + 1); ids 1..V-1 in a fixed pattern.
void token_batch(std::size_t B, std::size_t L, std::size_t V, xt::xarray<std::int64_t>& ids, BoolArray& pad) {
  ids = xt::xarray<std::int64_t>::from_shape({B, L});
  pad = BoolArray::from_shape({B, L});
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t len = L / 2 + (37 * b) % (L / 2 + 1);
    for (std::size_t t = 0; t < L; ++t) {
      pad(b, t) = t >= len;
      ids(b, t) = t >= len ? 0 : static_cast<std::int64_t>((b * 131 + t * 7919) % (V - 1) + 1);
    }
  }
}

// The torch-side cases that are entries of the op table, by entry.
const std::vector<std::pair<std::string, std::string>> kTableCases = {{"softmax", "softmax_last"},
                                                                      {"log_softmax", "log_softmax_last"},
                                                                      {"layer_norm", "layer_norm_last"},
                                                                      {"gelu", "gelu"},
                                                                      {"silu", "silu"},
                                                                      {"leaky_relu", "leaky_relu"},
                                                                      {"softplus", "softplus"},
                                                                      {"elu", "elu"},
                                                                      {"cumsum", "cumsum_dim1"},
                                                                      {"minimum", "minimum_broadcast"}};

// An op table entry's forward and backward at its benchmark shapes: input i from pattern salt 3, 5,
// 6, ... and the output's gradient from salt 4, as the hand-written cases draw theirs.
std::vector<double> run_table_case(const testing::OpInfo& op) {
  if (op.bench.empty()) {
    std::fprintf(stderr, "bench_tapegrad: the op table's entry '%s' has no benchmark shapes\n", op.name.c_str());
    std::exit(2);
  }
  std::vector<TensorF> in;
  for (std::size_t i = 0; i < op.bench.size(); ++i) in.push_back(input(op.bench[i], i == 0 ? 3 : 4 + i, true));
  const auto& f = op.function.get<float>();
  const Shape out_shape = f(in).shape();
  auto g = xt::xarray<float>(input(out_shape, 4, false).data());
  return measure([&] {
    f(in).backward(g);
    for (auto& x : in) x.zero_grad();
  });
}

std::vector<double> run_case(const std::string& name, bool bf16) {
  if (name.compare(0, 3, "op:") == 0) return run_table_case(testing::find_op(name.substr(3)));
  for (const auto& [torch_name, entry] : kTableCases)
    if (name == torch_name) return run_table_case(testing::find_op(entry));
  if (name == "gemm_2048") {
    auto a = pattern(2048 * 2048, 1), b = pattern(2048 * 2048, 2);
    std::vector<float> c(2048 * 2048);
    if (bf16) {
      const auto a16 = blas::to_bfloat16_matrix(a.data(), 2048, 2048, 2048);
      const auto b16 = blas::to_bfloat16_matrix(b.data(), 2048, 2048, 2048);
      return measure([&] {
        blas::gemm<float>(false, false, 2048, 2048, 2048, 1.f, a16.data(), 2048, b16.data(), 2048, 0.f, c.data(), 2048,
                          blas::Precision::BFloat16);
      });
    }
    return measure([&] {
      blas::gemm<float>(false, false, 2048, 2048, 2048, 1.f, a.data(), 2048, b.data(), 2048, 0.f, c.data(), 2048);
    });
  }
  if (name == "matmul_qkv" || name == "matmul_ff1" || name == "matmul_ff2") {
    // [B*L, in] @ [in, out] at the default model's shapes (qkv projection, linear1, linear2).
    const std::size_t m = 64 * 256, k = name == "matmul_ff2" ? 128 : 64,
                      n = name == "matmul_qkv" ? 192 : (name == "matmul_ff1" ? 128 : 64);
    auto a = input({m, k}, 1, false), b = input({k, n}, 2, false);
    return measure([&] { auto c = matmul(a, b); });
  }
  if (name == "matmul_scores") {  // per-head Q K^T: [B*H, L, D] @ [B*H, D, L]
    auto a = input({256, 256, 16}, 1, false), b = input({256, 16, 256}, 2, false);
    return measure([&] { auto c = matmul(a, b); });
  }
  // The elementwise ops of a training step, at the default model's shapes: the feed-forward
  // activation [B, L, ff], dropout there, a residual add [B, L, d], and the embedding's scale plus the
  // positional rows broadcast over the batch.
  // (gelu is the op table's.)
  if (name == "relu" || name == "dropout") {
    auto x = input({64, 256, 128}, 3, true);
    auto g = xt::xarray<float>(input({64, 256, 128}, 4, false).data());
    Generator gen(0);
    return measure([&] {
      auto y = name == "relu" ? relu(x) : dropout(x, 0.1, true, gen);
      y.backward(g);
      x.zero_grad();
    });
  }
  // clamp to [-0.5, 0.5] at the feed-forward's shape (the other ops a model of one's own reaches for,
  // silu, leaky_relu, softplus, elu, cumsum and a broadcast minimum, are the op table's).
  if (name == "clamp") {
    auto x = input({64, 256, 128}, 3, true);
    auto g = xt::xarray<float>(input({64, 256, 128}, 4, false).data());
    return measure([&] {
      clamp(x, -0.5, 0.5).backward(g);
      x.zero_grad();
    });
  }
  if (name == "logsumexp") {  // over the last dim of the attention scores' shape, as softmax
    auto x = input({64, 4, 256, 256}, 3, true);
    auto g = xt::xarray<float>(input({64, 4, 256}, 4, false).data());
    return measure([&] {
      logsumexp(x, -1).backward(g);
      x.zero_grad();
    });
  }
  // gather: each row's target log-probability out of a language model's [B * L, V]; index_select: rows
  // of a [V, d] table by the batch's token ids, as an embedding lookup.
  if (name == "gather") {
    auto x = input({4096, 2000}, 3, true);
    xt::xarray<std::int64_t> index = xt::xarray<std::int64_t>::from_shape({4096, 1});
    for (std::size_t i = 0; i < 4096; ++i) index(i, 0) = static_cast<std::int64_t>((i * 7919) % 2000);
    auto g = xt::xarray<float>(input({4096, 1}, 4, false).data());
    return measure([&] {
      gather(x, 1, index).backward(g);
      x.zero_grad();
    });
  }
  // topk: the 5 largest logits of each row of a language model's [B * L, V]; kl_div: a distillation
  // loss over the same shape (batchmean), the input log-probabilities differentiated.
  if (name == "topk") {
    auto x = input({4096, 2000}, 3, true);
    auto g = xt::xarray<float>(input({4096, 5}, 4, false).data());
    return measure([&] {
      topk(x, 5).values.backward(g);
      x.zero_grad();
    });
  }
  if (name == "kl_div") {
    auto x = input({4096, 2000}, 3, true);
    auto t = TensorF((input({4096, 2000}, 5, false).data() + 1.0f) * 0.5f);  // in [0, 1)
    return measure([&] {
      kl_div(x, t, Reduction::BatchMean).backward();
      x.zero_grad();
    });
  }
  // pad: 16 positions of padding after each sequence of [B, L, d]; normalize: each token's d-vector to
  // unit length (as for cosine-similarity retrieval).
  if (name == "pad" || name == "normalize") {
    auto x = input({64, 256, 64}, 3, true);
    const bool padding = name == "pad";
    auto g = xt::xarray<float>(input({64, padding ? 272u : 256u, 64}, 4, false).data());
    return measure([&] {
      (padding ? pad(x, {0, 0, 0, 16}) : normalize(x, 2, -1)).backward(g);
      x.zero_grad();
    });
  }
  if (name == "index_select") {
    auto table = input({20000, 64}, 3, true);
    xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({64 * 256});
    for (std::size_t i = 0; i < ids.size(); ++i) ids(i) = static_cast<std::int64_t>((i * 131) % 19999 + 1);
    auto g = xt::xarray<float>(input({64 * 256, 64}, 4, false).data());
    return measure([&] {
      index_select(table, 0, ids).backward(g);
      table.zero_grad();
    });
  }
  if (name == "add") {
    auto x = input({64, 256, 64}, 3, true), r = input({64, 256, 64}, 5, true);
    auto g = xt::xarray<float>(input({64, 256, 64}, 4, false).data());
    return measure([&] {
      (x + r).backward(g);
      x.zero_grad(), r.zero_grad();
    });
  }
  if (name == "scale_add_pe") {
    auto x = input({64, 256, 64}, 3, true), pe = input({1, 256, 64}, 5, false);
    auto g = xt::xarray<float>(input({64, 256, 64}, 4, false).data());
    return measure([&] {
      (x * 8.0f + pe).backward(g);
      x.zero_grad();
    });
  }
  // The fused ops against torch's composed ones: linear1 with its bias and ReLU, and the post-LN
  // residual add with its layer_norm.
  if (name == "linear_relu") {
    auto x = input({64, 256, 64}, 3, true), w = input({128, 64}, 5, true), b = input({128}, 6, true);
    auto g = xt::xarray<float>(input({64, 256, 128}, 4, false).data());
    return measure([&] {
      linear_activation(x, w, b, Activation::ReLU).backward(g);
      x.zero_grad(), w.zero_grad(), b.zero_grad();
    });
  }
  if (name == "add_layer_norm") {
    auto x = input({64, 256, 64}, 3, true), r = input({64, 256, 64}, 7, true);
    auto w = input({64}, 5, true), b = input({64}, 6, true);
    auto g = xt::xarray<float>(input({64, 256, 64}, 4, false).data());
    return measure([&] {
      add_layer_norm(x, r, {64}, w, b, 1e-5).backward(g);
      x.zero_grad(), r.zero_grad(), w.zero_grad(), b.zero_grad();
    });
  }
  // The pieces of a LLaMA-style block: RMSNorm over d (affine, LLaMA's eps), and rotary embeddings on
  // the queries [B, H, L, head_dim] of the default model's shapes.
  if (name == "rms_norm") {
    auto x = input({64, 256, 64}, 3, true), w = input({64}, 5, true);
    auto g = xt::xarray<float>(input({64, 256, 64}, 4, false).data());
    return measure([&] {
      rms_norm(x, {64}, w, 1e-6).backward(g);
      x.zero_grad(), w.zero_grad();
    });
  }
  if (name == "rotary") {
    auto x = input({64, 4, 256, 16}, 3, true);
    auto g = xt::xarray<float>(input({64, 4, 256, 16}, 4, false).data());
    auto [cos, sin] = rotary_tables<float>(16, 256);
    const Tensor<float> c(std::move(cos)), s(std::move(sin));
    return measure([&] {
      rotary_embedding(x, c, s).backward(g);
      x.zero_grad();
    });
  }
  if (name == "attention") {  // self-attention [B, L, d] with a key padding mask, dropout 0.1, training
    Generator gen(0);
    nn::MultiheadAttentionOptions o(64, 4);
    o.dropout = 0.1;
    o.batch_first = true;
    nn::MultiheadAttention<float> mha(o, gen);
    mha.train();
    auto x = input({64, 256, 64}, 3, true);
    auto g = xt::xarray<float>(input({64, 256, 64}, 4, false).data());
    xt::xarray<std::int64_t> ids;
    BoolArray pad;
    token_batch(64, 256, 20000, ids, pad);
    nn::AttentionMask<float> kpm(pad);
    return measure([&] {
      auto y = mha.forward(x, x, x, kpm, /*need_weights=*/false).first;
      y.backward(g);
      x.zero_grad();
      for (auto& p : mha.parameters()) p.zero_grad();
    });
  }
  if (name == "embedding_adamw") {  // lookup [B, L] in [20000, 64], backward, AdamW step over the table
    Generator gen(0);
    nn::Embedding<float> emb(20000, 64, gen, 0);
    optim::AdamW<float> opt(emb.parameters(), {});
    xt::xarray<std::int64_t> ids;
    BoolArray pad;
    token_batch(64, 256, 20000, ids, pad);
    auto g = xt::xarray<float>(input({64, 256, 64}, 4, false).data());
    return measure([&] {
      opt.zero_grad();
      emb.forward(ids).backward(g);
      opt.step();
    });
  }
  const std::string suffix = "_checkpointed";
  const bool checkpointed =
      name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  const std::string model_case = checkpointed ? name.substr(0, name.size() - suffix.size()) : name;
  const bool large = model_case == "train_large" || model_case == "train_large_2k" || model_case == "train_large_8k";
  const bool long_case = model_case == "train_default_1k" || model_case == "train_default_4k" || large;
  if (checkpointed && !large) {  // only the large model's cases have a checkpointed variant
    std::fprintf(stderr, "bench_tapegrad: unknown case '%s'\n", name.c_str());
    std::exit(2);
  }
  if (model_case == "train_default" || model_case == "eval_default" || long_case) {
    const bench::ModelConfig c = model_case == "train_large"        ? bench::kLarge
                                 : model_case == "train_large_2k"   ? bench::kLarge2k
                                 : model_case == "train_large_8k"   ? bench::kLarge8k
                                 : model_case == "train_default_1k" ? bench::kDefault1k
                                 : model_case == "train_default_4k" ? bench::kDefault4k
                                                                    : bench::kDefault;
    const bool slow = long_case;
    Generator gen(0);
    models::TransformerClassifierOptions options = bench::classifier_options(c);
    options.activation_checkpointing = checkpointed;
    models::TransformerClassifier<float> model(options, gen);
    xt::xarray<std::int64_t> ids;
    BoolArray pad;
    token_batch(c.B, c.L, 20000, ids, pad);
    IndexArray target = IndexArray::from_shape({c.B});
    for (std::size_t b = 0; b < c.B; ++b) target(b) = static_cast<std::int64_t>(b % 2);
    if (model_case == "eval_default") {
      model.eval();
      return measure([&] {
        NoGradGuard guard;
        autocast cast(bf16);
        auto logits = model.forward(ids, pad);
      });
    }
    model.train();
    const auto params = model.parameters();
    optim::AdamW<float> opt(params, {});
    return measure(
        [&] {
          opt.zero_grad();
          {
            autocast cast(bf16);
            auto loss = cross_entropy(model.forward(ids, pad), target);
            loss.backward();
          }
          optim::clip_grad_norm_(params, 1.0);
          opt.step();
        },
        slow ? 6000 : 2500, slow ? 3 : 5);
  }
  std::fprintf(stderr, "bench_tapegrad: unknown case '%s'\n", name.c_str());
  std::exit(2);
}

// The load average over the last minute, as /proc/loadavg gives it (-1 where there is none).
double load_average() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

// One large case's training step with and without activation checkpointing, alternating in one
// process for `steps` steps each after one warm-up step each, so that the load of a shared machine
// falls on both alike: each step's CPU time (user + system, all threads) and the load average as JSON
// lines, then the medians and their ratio. Peak RSS means nothing here (both models live at once).
int interleave(const std::string& name, int steps) {
  const bench::ModelConfig c = name == "train_large"      ? bench::kLarge
                               : name == "train_large_2k" ? bench::kLarge2k
                                                          : bench::kLarge8k;
  struct Run {
    std::unique_ptr<models::TransformerClassifier<float>> model;
    std::unique_ptr<optim::AdamW<float>> opt;
    std::vector<double> cpu;
  };
  Run runs[2];
  for (int k = 0; k < 2; ++k) {
    Generator gen(0);
    models::TransformerClassifierOptions options = bench::classifier_options(c);
    options.activation_checkpointing = k == 1;
    runs[k].model = std::make_unique<models::TransformerClassifier<float>>(options, gen);
    runs[k].model->train();
    runs[k].opt = std::make_unique<optim::AdamW<float>>(runs[k].model->parameters(), optim::AdamWOptions{});
  }
  xt::xarray<std::int64_t> ids;
  BoolArray pad;
  token_batch(c.B, c.L, 20000, ids, pad);
  IndexArray target = IndexArray::from_shape({c.B});
  for (std::size_t b = 0; b < c.B; ++b) target(b) = static_cast<std::int64_t>(b % 2);
  for (int step = 0; step <= steps; ++step) {
    for (int k = 0; k < 2; ++k) {
      Run& r = runs[k];
      double u0, s0, u1, s1;
      cpu_ms(u0, s0);
      const double wall = time_ms([&] {
        r.opt->zero_grad();
        cross_entropy(r.model->forward(ids, pad), target).backward();
        optim::clip_grad_norm_(r.model->parameters(), 1.0);
        r.opt->step();
      });
      cpu_ms(u1, s1);
      const double cpu = (u1 - u0) + (s1 - s0);
      if (step > 0) r.cpu.push_back(cpu);  // step 0 warms up
      std::printf("{\"case\": \"%s%s\", \"step\": %d, \"cpu_ms\": %.0f, \"wall_ms\": %.0f, \"load\": %.2f}\n",
                  name.c_str(), k ? "_checkpointed" : "", step, cpu, wall, load_average());
      std::fflush(stdout);
    }
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  const double plain = median(runs[0].cpu), checkpointed = median(runs[1].cpu);
  std::printf(
      "{\"case\": \"%s\", \"steps\": %d, \"median_cpu_ms\": %.0f, \"median_cpu_ms_checkpointed\": %.0f, "
      "\"ratio\": %.3f}\n",
      name.c_str(), steps, plain, checkpointed, checkpointed / plain);
  return 0;
}

}  // namespace

// The machine line as a JSON string value.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--machine") {
    std::printf("{\"machine\": %s, \"native_bf16\": %s}\n", json_string(machine_line()).c_str(),
                has_native_bfloat16() ? "true" : "false");
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "--ops") {  // the op table's cases
    for (const auto& op : testing::op_registry())
      if (!op.bench.empty()) std::printf("op:%s\n", op.name.c_str());
    return 0;
  }
  if (argc == 5 && std::string(argv[1]) == "--interleave") {  // --interleave <large case> <steps> <threads>
    const std::string name = argv[2];
    const int steps = std::atoi(argv[3]);
    if ((name != "train_large" && name != "train_large_2k" && name != "train_large_8k") || steps < 1) {
      std::fprintf(stderr,
                   "bench_tapegrad --interleave: train_large, train_large_2k or train_large_8k and steps >= 1\n");
      return 2;
    }
    set_num_threads(std::atoi(argv[4]));
    return interleave(name, steps);
  }
  const std::string precision = argc == 4 ? argv[3] : "fp32";
  if ((argc != 3 && argc != 4) || (precision != "fp32" && precision != "bf16")) {
    std::fprintf(stderr,
                 "usage: bench_tapegrad <case> <threads> [fp32|bf16]\n       bench_tapegrad --machine\n"
                 "       bench_tapegrad --ops\n");
    return 2;
  }
  const std::string name = argv[1];
  const int threads = std::stoi(argv[2]);
  set_num_threads(threads);
  const long base = peak_rss_kb();
  autocast cast(precision == "bf16");  // the cases other than the models' and gemm_2048 run inside it whole
  const auto t = run_case(name, precision == "bf16");
  std::string times;
  for (double v : t) times += (times.empty() ? "" : ", ") + std::to_string(v);
  std::printf(
      "{\"side\": \"tapegrad\", \"case\": \"%s\", \"threads\": %d, \"precision\": \"%s\", \"times_ms\": [%s], "
      "\"rss_base_kb\": %ld, \"rss_peak_kb\": %ld, \"peak_live_kb\": %zu, \"user_ms\": %.3f, \"sys_ms\": %.3f}\n",
      name.c_str(), threads, precision.c_str(), times.c_str(), base, peak_rss_kb(), cache_stats().peak_live_bytes >> 10,
      g_user_per_call, g_sys_per_call);
  return 0;
}
