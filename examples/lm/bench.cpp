#include "examples/lm/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/lm/model.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/machine.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/timing.hpp"

namespace lm {

namespace tt = tapegrad::train;

namespace {

struct Timing {
  double prefill = 0.0;    // from the call to the first new token (the prompt, then one token)
  double per_token = 0.0;  // between the first and the last new token, per token
  std::vector<std::int64_t> tokens;
};

// Generates greedily and times each new token's arrival: the first one carries the prompt's cost, the
// others one token each.
Timing time_generation(const tapegrad::models::CausalLM<float>& model, const std::vector<std::int64_t>& prompt,
                       std::size_t new_tokens, bool use_cache) {
  tapegrad::models::GenerateOptions options;
  options.sampling.temperature = 0.0;
  options.max_new_tokens = new_tokens;
  options.use_cache = use_cache;
  const tt::Stopwatch clock;
  double first = 0.0, last = 0.0;
  Timing t;
  t.tokens = tapegrad::models::generate<float>(model, prompt, options, [&](std::int64_t) {
    last = clock.seconds();
    if (first == 0.0) first = last;
  });
  t.prefill = first;
  t.per_token = (last - first) / double(new_tokens - 1);
  return t;
}

}  // namespace

int bench_command(const BenchArgs& a, std::ostream& out, std::ostream& err) {
  if (a.new_tokens < 2) throw tt::UsageError(fmt::format("--new-tokens {} must be at least 2", a.new_tokens));
  if (a.repeats < 1) throw tt::UsageError(fmt::format("--repeats {} must be positive", a.repeats));
  if (a.threads <= 0) throw tt::UsageError(fmt::format("--threads {} must be positive", a.threads));
  if (a.seed < 0) throw tt::UsageError(fmt::format("--seed {} must not be negative", a.seed));
  if (a.contexts.empty()) throw tt::UsageError("--contexts is empty");
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw tt::UsageError(*problem);
  namespace lim = examples::limits;
  for (const auto& [flag, value, limit] :
       {std::tuple{"--new-tokens", a.new_tokens, lim::kSequenceLength},
        std::tuple{"--repeats", a.repeats, std::int64_t{1000}}, std::tuple{"--threads", a.threads, lim::kThreads}}) {
    if (value > limit) throw tt::UsageError(fmt::format("{} {} is above the limit of {}", flag, value, limit));
  }
  for (std::int64_t c : a.contexts) {
    if (c < 1 || c > lim::kSequenceLength) {
      throw tt::UsageError(fmt::format("--contexts {} is outside [1, {}]", c, lim::kSequenceLength));
    }
  }
  tapegrad::set_num_threads(static_cast<int>(a.threads));
  const LoadedRun run = load_causal_run(a.run);
  const bool bf16 = examples::subcommand_uses_bfloat16(a.precision, run.config.precision, err);
  const tapegrad::autocast precision(bf16);
  const auto& model = run.model->causal_lm();
  const std::size_t max_len = model.max_len(), vocab = model.vocab_size();
  for (std::int64_t c : a.contexts) {
    if (c <= a.new_tokens || static_cast<std::size_t>(c) > max_len) {
      throw tt::UsageError(
          fmt::format("--contexts {}: each context must exceed --new-tokens {} and be at most the "
                      "model's context of {}",
                      c, a.new_tokens, max_len));
    }
  }
  err << fmt::format("{}\n{} thread(s), {}; {} new tokens per measurement (greedy), the fastest of {} repeats\n",
                     tapegrad::machine_line(), a.threads, bf16 ? "bf16" : "fp32", a.new_tokens, a.repeats);
  out << "context  prompt  prefill (cache)  tokens/s with cache  tokens/s without  speedup  same tokens\n";
  tapegrad::Generator gen(static_cast<std::uint64_t>(a.seed));
  for (std::int64_t c : a.contexts) {
    std::vector<std::int64_t> prompt(static_cast<std::size_t>(c - a.new_tokens));
    for (auto& id : prompt) id = static_cast<std::int64_t>(2 + gen.randint(vocab - 2));  // not <pad> or <unk>
    Timing cached, full;
    cached.per_token = full.per_token = cached.prefill = std::numeric_limits<double>::infinity();
    for (std::int64_t r = 0; r < a.repeats; ++r) {
      for (bool use_cache : {true, false}) {
        const Timing t = time_generation(model, prompt, static_cast<std::size_t>(a.new_tokens), use_cache);
        Timing& best = use_cache ? cached : full;
        best.tokens = t.tokens;
        best.per_token = std::min(best.per_token, t.per_token);
        best.prefill = std::min(best.prefill, t.prefill);
      }
    }
    const bool same = cached.tokens == full.tokens;
    out << fmt::format("{:>7}  {:>6}  {:>13.1f} ms  {:>19.1f}  {:>16.1f}  {:>6.1f}x  {}\n", c, prompt.size(),
                       1e3 * cached.prefill, 1.0 / cached.per_token, 1.0 / full.per_token,
                       full.per_token / cached.per_token, same ? "yes" : "NO");
    out << std::flush;
    if (!same) {
      throw std::runtime_error(
          fmt::format("at context {} the KV cache and full recomputation chose different greedy tokens", c));
    }
  }
  return 0;
}

}  // namespace lm
