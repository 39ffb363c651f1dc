#include "examples/lm/generate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <tuple>

#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/lm/model_folder.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/timing.hpp"

namespace lm {

namespace tt = tapegrad::train;

namespace {

// The decoding options the flags give, each checked before the model is read.
tapegrad::models::GenerateOptions checked_options(const GenerateArgs& a) {
  if (a.max_new_tokens <= 0)
    throw tt::UsageError(fmt::format("--max-new-tokens {} must be positive", a.max_new_tokens));
  if (a.top_k < 0) throw tt::UsageError(fmt::format("--top-k {} must not be negative", a.top_k));
  if (a.seed < 0) throw tt::UsageError(fmt::format("--seed {} must not be negative", a.seed));
  if (a.prompt_tokens < 0)
    throw tt::UsageError(fmt::format("--prompt-tokens {} must not be negative", a.prompt_tokens));
  // Bounds known before the run is read: no context is longer, no vocabulary larger.
  namespace lim = examples::limits;
  for (const auto& [flag, value, limit] : {std::tuple{"--max-new-tokens", a.max_new_tokens, lim::kSequenceLength},
                                           std::tuple{"--prompt-tokens", a.prompt_tokens, lim::kSequenceLength},
                                           std::tuple{"--top-k", a.top_k, lim::kVocabSize}}) {
    if (value > limit) throw tt::UsageError(fmt::format("{} {} is above the limit of {}", flag, value, limit));
  }
  if (const auto problem = examples::threads_problem(a.threads)) throw tt::UsageError(*problem);
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw tt::UsageError(*problem);
  tapegrad::models::GenerateOptions options;
  options.sampling.temperature = a.temperature;
  options.sampling.top_k = static_cast<std::size_t>(a.top_k);
  options.sampling.top_p = a.top_p;
  if (!(a.temperature >= 0.0) || std::isinf(a.temperature)) {
    throw tt::UsageError(fmt::format("--temperature {} must be a finite number >= 0", a.temperature));
  }
  if (!(a.top_p > 0.0 && a.top_p <= 1.0)) throw tt::UsageError(fmt::format("--top-p {} is outside (0, 1]", a.top_p));
  options.max_new_tokens = static_cast<std::size_t>(a.max_new_tokens);
  options.seed = static_cast<std::uint64_t>(a.seed);
  options.use_cache = !a.no_cache;
  return options;
}

}  // namespace

int generate_command(const GenerateArgs& a, std::istream& in, std::ostream& out, std::ostream& err) {
  const tapegrad::models::GenerateOptions options = checked_options(a);
  tapegrad::set_num_threads(static_cast<int>(a.threads));

  const ModelFolder run = load_model_folder(a.run);
  const bool bf16 = examples::subcommand_uses_bfloat16(a.precision, run.precision, err);
  const tapegrad::autocast precision(bf16);
  std::string text;
  if (a.prompt.empty()) {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    for (const auto& word : a.prompt) text += (text.empty() ? "" : " ") + word;
  }
  std::vector<std::int64_t> prompt = run.tokenizer->encode(text);
  if (a.prompt_tokens > 0 && prompt.size() > static_cast<std::size_t>(a.prompt_tokens)) {
    prompt.erase(prompt.begin(), prompt.end() - a.prompt_tokens);
  }
  if (prompt.empty()) throw tt::UsageError("the prompt has no tokens");
  const std::size_t context = run.model->max_len();
  if (prompt.size() + options.max_new_tokens > context) {
    throw tt::UsageError(fmt::format(
        "the prompt's {} tokens plus --max-new-tokens {} exceed the model's context of {} (--prompt-tokens keeps "
        "the prompt's last ones)",
        prompt.size(), options.max_new_tokens, context));
  }
  const std::string shown = run.tokenizer->decode(prompt);
  out << shown << " |" << std::flush;
  // Words are written a space apart; subwords carry their own spaces, and a piece's text may depend on
  // the pieces before it, so the new text is what decoding the whole sequence adds.
  std::vector<std::int64_t> sequence = prompt;
  std::size_t written = shown.size();
  const tt::Stopwatch clock;
  const auto generated = tapegrad::models::generate<float>(*run.model, prompt, options, [&](std::int64_t id) {
    // A model's vocabulary may be larger than its tokenizer's (rows padded for speed): such an id has no text.
    if (static_cast<std::size_t>(id) >= run.tokenizer->vocab_size()) {
      out << fmt::format("[id {}]", id) << std::flush;
      return;
    }
    if (run.tokenizer->spaced()) {
      out << ' ' << run.tokenizer->decode({id}) << std::flush;
      return;
    }
    sequence.push_back(id);
    const std::string all = run.tokenizer->decode(sequence);
    if (all.size() > written) {
      out << all.substr(written) << std::flush;
      written = all.size();
    }
  });
  const double seconds = clock.seconds();
  out << std::endl;
  err << fmt::format(
      "{} new tokens after a prompt of {} in {:.3f} s: {:.1f} tokens/s ({}, KV cache {}; seed {}, "
      "temperature {}, top-k {}, top-p {})\n",
      generated.size(), prompt.size(), seconds, double(generated.size()) / std::max(seconds, 1e-9),
      bf16 ? "bf16" : "fp32", options.use_cache ? "on" : "off", a.seed, a.temperature, a.top_k, a.top_p);
  return 0;
}

}  // namespace lm
