/// @file
/// Sampling text from a causal language model (GPT, Llama, any CausalLM): greedy decoding, temperature,
/// top-k and top-p (nucleus) sampling, seeded so that the same seed gives the same tokens, with or
/// without the key/value cache.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/models/causal_lm.hpp"

namespace tapegrad::models {

/// How one token is picked from a row of logits, in the order of Hugging Face's samplers: logits / temperature, keep
/// the top_k largest, then keep the most probable of those until their probability reaches top_p.
struct SamplingOptions {
  double temperature = 1.0;  ///< 0: greedy (argmax, the lowest id among equal logits); else > 0
  std::size_t top_k = 0;     ///< 0: no limit
  double top_p = 1.0;        ///< in (0, 1]; 1: no limit

  /// Throws std::invalid_argument naming the field and value.
  void validate() const;
};

/// The ids a sample may take from `logits` (vocab_size values), ascending: with temperature 0 the
/// argmax alone; else the top_k largest logits (ties at the border: lower ids first), of which the
/// smallest set of most probable ones (after temperature) whose probabilities sum to at least top_p
/// (always at least one). Tokens outside it have probability 0 in sample_token.
template <typename T>
std::vector<std::int64_t> allowed_tokens(const T* logits, std::size_t vocab_size, const SamplingOptions& options);

/// One token drawn from softmax(logits / temperature) restricted to allowed_tokens and renormalized,
/// with one gen.uniform() (none when greedy). Throws std::invalid_argument for NaN logits.
template <typename T>
std::int64_t sample_token(const T* logits, std::size_t vocab_size, const SamplingOptions& options, Generator& gen);

/// What generate() does: how each token is sampled, how many are added, and whether the KV cache is used.
struct GenerateOptions {
  SamplingOptions sampling;
  std::size_t max_new_tokens = 64;
  std::uint64_t seed = 0;  ///< of the Generator the samples are drawn from
  /// Incremental decoding with the key/value cache (one position per layer and token); false re-runs
  /// the whole sequence for each token, which gives the same tokens more slowly.
  bool use_cache = true;
  std::optional<std::int64_t> stop_token;  ///< generation ends after emitting it
};

/// Continues `prompt` (at least one id; prompt.size() + max_new_tokens <= model.max_len()) and returns
/// the new ids only, calling on_token with each as soon as it is chosen. Runs without recording, in the
/// model's current mode (call eval() first). Throws std::invalid_argument for an empty or too long
/// prompt, or bad sampling options. Takes any CausalLM (GPT, Llama): one decoding loop for every model.
template <typename T>
std::vector<std::int64_t> generate(const CausalLM<T>& model, const std::vector<std::int64_t>& prompt,
                                   const GenerateOptions& options,
                                   const std::function<void(std::int64_t)>& on_token = {});

}  // namespace tapegrad::models
