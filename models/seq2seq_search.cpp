#include "tapegrad/models/seq2seq_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::models {

namespace {

// The sequences as a [N, L] id array; all have the same length here.
xt::xarray<std::int64_t> as_batch(const std::vector<std::vector<std::int64_t>>& seqs) {
  const std::size_t n = seqs.size(), len = seqs.front().size();
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({n, len});
  for (std::size_t i = 0; i < n; ++i) std::copy(seqs[i].begin(), seqs[i].end(), ids.data() + i * len);
  return ids;
}

// log-softmax over the last position's logits of row `row` of [N, L, V], in double.
template <typename T>
void last_log_probs(const xt::xarray<T>& logits, std::size_t row, std::vector<double>& out) {
  const std::size_t len = logits.shape(1), vocab = logits.shape(2);
  const T* x = logits.data() + (row * len + len - 1) * vocab;
  out.resize(vocab);
  double mx = -std::numeric_limits<double>::infinity();
  for (std::size_t v = 0; v < vocab; ++v) mx = std::max(mx, static_cast<double>(x[v]));
  double total = 0;
  for (std::size_t v = 0; v < vocab; ++v) total += std::exp(static_cast<double>(x[v]) - mx);
  const double lse = mx + std::log(total);
  for (std::size_t v = 0; v < vocab; ++v) out[v] = static_cast<double>(x[v]) - lse;
}

// Each row of a [B, ...] array repeated k times consecutively: [B * k, ...].
template <typename A>
A repeat_rows(const A& a, std::size_t k) {
  auto shape = a.shape();
  const std::size_t rows = shape[0], row_size = rows ? a.size() / rows : 0;
  std::vector<std::size_t> out_shape(shape.begin(), shape.end());
  out_shape[0] = rows * k;
  A out = A::from_shape(out_shape);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < k; ++j)
      std::copy(a.data() + r * row_size, a.data() + (r + 1) * row_size, out.data() + (r * k + j) * row_size);
  return out;
}

}  // namespace

template <typename T>
std::vector<std::vector<std::int64_t>> greedy_decode(const Transformer<T>& model, const xt::xarray<std::int64_t>& src,
                                                     const BoolArray& src_padding, const SearchOptions& o) {
  NoGradGuard no_grad;
  const Tensor<T> memory = model.encode(src, src_padding);
  const std::size_t batch = src.shape(0);
  std::vector<std::vector<std::int64_t>> seqs(batch, std::vector<std::int64_t>{o.bos});
  std::vector<bool> done(batch, false);
  std::vector<double> log_probs;
  for (std::size_t step = 0; step < o.max_len; ++step) {
    const Tensor<T> decoded = model.decode(as_batch(seqs), memory, src_padding);
    const xt::xarray<T>& logits = decoded.data();
    bool all_done = true;
    for (std::size_t b = 0; b < batch; ++b) {
      if (done[b]) {
        seqs[b].push_back(o.eos);  // keeps the batch rectangular; never read
        continue;
      }
      last_log_probs(logits, b, log_probs);
      const auto best =
          static_cast<std::int64_t>(std::max_element(log_probs.begin(), log_probs.end()) - log_probs.begin());
      seqs[b].push_back(best);
      if (best == o.eos) done[b] = true;
      all_done = all_done && done[b];
    }
    if (all_done) break;
  }
  for (auto& s : seqs) {
    s.erase(s.begin());  // bos
    s.erase(std::find(s.begin(), s.end(), o.eos), s.end());
  }
  return seqs;
}

template <typename T>
std::vector<std::vector<std::int64_t>> beam_search(const Transformer<T>& model, const xt::xarray<std::int64_t>& src,
                                                   const BoolArray& src_padding, const SearchOptions& o) {
  if (o.beam_size == 0) throw std::invalid_argument("beam_search: beam_size must be positive, got 0");
  NoGradGuard no_grad;
  const std::size_t batch = src.shape(0), k = o.beam_size;
  // Every source row repeated k times, one row per beam slot; slots without a live hypothesis decode
  // a placeholder that is never read.
  const Tensor<T> memory(repeat_rows(model.encode(src, src_padding).data(), k));
  const BoolArray padding = src_padding.dimension() ? repeat_rows(src_padding, k) : BoolArray();

  struct Hypothesis {
    std::vector<std::int64_t> tokens;  // starts with bos
    double score;
  };
  std::vector<std::vector<Hypothesis>> live(batch, {Hypothesis{{o.bos}, 0.0}}), finished(batch);
  std::vector<double> log_probs;
  for (std::size_t step = 0; step < o.max_len; ++step) {
    bool any_live = false;
    std::vector<std::vector<std::int64_t>> rows(batch * k, std::vector<std::int64_t>(step + 1, o.bos));
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < live[b].size(); ++i) {
        rows[b * k + i] = live[b][i].tokens;
        any_live = true;
      }
    if (!any_live) break;
    const Tensor<T> decoded = model.decode(as_batch(rows), memory, padding);
    const xt::xarray<T>& logits = decoded.data();
    for (std::size_t b = 0; b < batch; ++b) {
      if (live[b].empty()) continue;
      std::vector<std::tuple<double, std::size_t, std::int64_t>> candidates;  // score, hypothesis, token
      for (std::size_t i = 0; i < live[b].size(); ++i) {
        last_log_probs(logits, b * k + i, log_probs);
        for (std::size_t v = 0; v < log_probs.size(); ++v)
          candidates.emplace_back(live[b][i].score + log_probs[v], i, static_cast<std::int64_t>(v));
      }
      const std::size_t keep = std::min(k, candidates.size());
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), candidates.end(),
                        [](const auto& a, const auto& c) {
                          if (std::get<0>(a) != std::get<0>(c)) return std::get<0>(a) > std::get<0>(c);
                          if (std::get<1>(a) != std::get<1>(c)) return std::get<1>(a) < std::get<1>(c);
                          return std::get<2>(a) < std::get<2>(c);
                        });
      std::vector<Hypothesis> next;
      for (std::size_t c = 0; c < keep; ++c) {
        const auto& [score, i, token] = candidates[c];
        Hypothesis h{live[b][i].tokens, score};
        h.tokens.push_back(token);
        (token == o.eos ? finished[b] : next).push_back(std::move(h));
      }
      live[b] = std::move(next);
      if (!finished[b].empty() && !live[b].empty()) {
        double best_finished = -std::numeric_limits<double>::infinity();
        for (const auto& h : finished[b]) best_finished = std::max(best_finished, h.score);
        if (best_finished >= live[b].front().score) live[b].clear();  // live is sorted, best first
      }
    }
  }
  std::vector<std::vector<std::int64_t>> out(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const auto& pool = finished[b].empty() ? live[b] : finished[b];
    const auto best = std::max_element(pool.begin(), pool.end(),
                                       [](const Hypothesis& a, const Hypothesis& c) { return a.score < c.score; });
    out[b].assign(best->tokens.begin() + 1, best->tokens.end());
    out[b].erase(std::find(out[b].begin(), out[b].end(), o.eos), out[b].end());
  }
  return out;
}

template std::vector<std::vector<std::int64_t>> greedy_decode(const Transformer<float>&,
                                                              const xt::xarray<std::int64_t>&, const BoolArray&,
                                                              const SearchOptions&);
template std::vector<std::vector<std::int64_t>> greedy_decode(const Transformer<double>&,
                                                              const xt::xarray<std::int64_t>&, const BoolArray&,
                                                              const SearchOptions&);
template std::vector<std::vector<std::int64_t>> beam_search(const Transformer<float>&, const xt::xarray<std::int64_t>&,
                                                            const BoolArray&, const SearchOptions&);
template std::vector<std::vector<std::int64_t>> beam_search(const Transformer<double>&, const xt::xarray<std::int64_t>&,
                                                            const BoolArray&, const SearchOptions&);

}  // namespace tapegrad::models
