#include "tapegrad/models/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::models {

void SamplingOptions::validate() const {
  if (!(temperature >= 0.0) || std::isinf(temperature)) {
    throw std::invalid_argument(fmt::format("temperature must be a finite number >= 0, got {}", temperature));
  }
  if (!(top_p > 0.0 && top_p <= 1.0))
    throw std::invalid_argument(fmt::format("top_p must be in (0, 1], got {}", top_p));
}

namespace {

// The id of the largest logit, the lowest among equals.
template <typename T>
std::int64_t argmax(const T* logits, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<std::int64_t>(best);
}

// The allowed ids, most probable first (ties: lower id first), with their unnormalized probabilities
// exp((logit - max) / temperature).
template <typename T>
std::vector<std::pair<std::int64_t, double>> candidates(const T* logits, std::size_t n, const SamplingOptions& o) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::isnan(logits[i])) throw std::invalid_argument(fmt::format("sample_token: logit {} is NaN", i));
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const auto before = [&](std::int64_t a, std::int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  const std::size_t k = o.top_k == 0 ? n : std::min(o.top_k, n);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), before);
  order.resize(k);
  const double top = static_cast<double>(logits[order.front()]);
  std::vector<std::pair<std::int64_t, double>> kept;
  double total = 0.0;
  for (std::int64_t id : order) {
    const double w = std::exp((static_cast<double>(logits[id]) - top) / o.temperature);
    kept.emplace_back(id, w);
    total += w;
  }
  if (o.top_p < 1.0) {
    double mass = 0.0;
    std::size_t keep = 0;
    while (keep < kept.size() && mass < o.top_p * total) mass += kept[keep++].second;
    kept.resize(std::max<std::size_t>(keep, 1));
  }
  return kept;
}

}  // namespace

template <typename T>
std::vector<std::int64_t> allowed_tokens(const T* logits, std::size_t vocab_size, const SamplingOptions& options) {
  options.validate();
  if (vocab_size == 0) throw std::invalid_argument("allowed_tokens: no logits");
  std::vector<std::int64_t> ids;
  if (options.temperature == 0.0) {
    ids.push_back(argmax(logits, vocab_size));
  } else {
    for (const auto& [id, w] : candidates(logits, vocab_size, options)) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
  }
  return ids;
}

template <typename T>
std::int64_t sample_token(const T* logits, std::size_t vocab_size, const SamplingOptions& options, Generator& gen) {
  options.validate();
  if (vocab_size == 0) throw std::invalid_argument("sample_token: no logits");
  if (options.temperature == 0.0) return argmax(logits, vocab_size);
  const auto kept = candidates(logits, vocab_size, options);
  double total = 0.0;
  for (const auto& c : kept) total += c.second;
  const double u = gen.uniform() * total;
  double acc = 0.0;
  for (const auto& [id, w] : kept) {
    acc += w;
    if (u < acc) return id;
  }
  return kept.back().first;  // u within rounding of total
}

template <typename T>
std::vector<std::int64_t> generate(const CausalLM<T>& model, const std::vector<std::int64_t>& prompt,
                                   const GenerateOptions& options, const std::function<void(std::int64_t)>& on_token) {
  options.sampling.validate();
  const std::size_t context = model.max_len();
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt has no tokens");
  if (prompt.size() + options.max_new_tokens > context) {
    throw std::invalid_argument(
        fmt::format("generate: the prompt's {} tokens plus {} new ones exceed the model's context of {} positions",
                    prompt.size(), options.max_new_tokens, context));
  }
  NoGradGuard no_grad;
  Generator gen(options.seed);
  const std::size_t vocab = model.vocab_size();
  std::vector<std::int64_t> sequence = prompt, generated;
  typename CausalLM<T>::Cache cache;
  const auto as_ids = [](const std::int64_t* first, std::size_t n) {
    xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, n});
    std::copy(first, first + n, ids.data());
    return ids;
  };
  while (generated.size() < options.max_new_tokens) {
    // Only the last position's logits are read, so only its row is projected, both ways.
    Tensor<T> logits;
    if (options.use_cache) {
      const std::size_t done = cache.length();  // feed the positions the cache has not seen yet
      logits = model.next_token_logits(as_ids(sequence.data() + done, sequence.size() - done), cache);
    } else {
      const xt::xarray<std::int64_t> last = {static_cast<std::int64_t>(sequence.size() - 1)};
      logits = model.forward_rows(as_ids(sequence.data(), sequence.size()), last);
    }
    const std::int64_t next = sample_token(logits.data().data(), vocab, options.sampling, gen);
    sequence.push_back(next);
    generated.push_back(next);
    if (on_token) on_token(next);
    if (options.stop_token && next == *options.stop_token) break;
  }
  return generated;
}

template std::vector<std::int64_t> allowed_tokens<float>(const float*, std::size_t, const SamplingOptions&);
template std::vector<std::int64_t> allowed_tokens<double>(const double*, std::size_t, const SamplingOptions&);
template std::int64_t sample_token<float>(const float*, std::size_t, const SamplingOptions&, Generator&);
template std::int64_t sample_token<double>(const double*, std::size_t, const SamplingOptions&, Generator&);
template std::vector<std::int64_t> generate<float>(const CausalLM<float>&, const std::vector<std::int64_t>&,
                                                   const GenerateOptions&, const std::function<void(std::int64_t)>&);
template std::vector<std::int64_t> generate<double>(const CausalLM<double>&, const std::vector<std::int64_t>&,
                                                    const GenerateOptions&, const std::function<void(std::int64_t)>&);

}  // namespace tapegrad::models
