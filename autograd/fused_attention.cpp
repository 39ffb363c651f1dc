#include "tapegrad/autograd/fused_attention.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "tapegrad/autograd/blas.hpp"
#include "tapegrad/autograd/dropout.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {

struct Dims {
  std::size_t B, L, S, H, D;
};

// Where an operand's head h of batch b starts: base + b * batch_stride + h * D, rows ld apart.
template <typename P>
struct Slab {
  P* base;
  std::size_t ld, batch_stride;
  P* at(std::size_t b, std::size_t h, std::size_t D) const { return base + b * batch_stride + h * D; }
};

// The per-row masks of one (batch, head) pair.
struct RowMasks {
  const bool* key_padding;  // [S] or null
  const bool* attn;         // [L, S] or null
  bool causal;
};

RowMasks row_masks(const AttentionBoolMasks& m, const Dims& d, std::size_t b, std::size_t h) {
  RowMasks r{nullptr, nullptr, m.is_causal};
  if (m.key_padding_mask) r.key_padding = m.key_padding_mask->data() + b * d.S;
  if (m.attn_mask) r.attn = m.attn_mask->data() + (m.attn_mask->dimension() == 3 ? (b * d.H + h) * d.L * d.S : 0);
  return r;
}

// Scores of row i in place -> attention weights: masked entries -inf, then softmax; a row with every
// key masked becomes all zeros (as nn::MultiheadAttention's composed path does).
template <typename T>
void masked_softmax_row(T* row, std::size_t i, std::size_t S, const RowMasks& m) {
  const T inf = std::numeric_limits<T>::infinity();
  if (m.key_padding)
    for (std::size_t j = 0; j < S; ++j) row[j] = m.key_padding[j] ? -inf : row[j];
  if (m.attn) {
    const bool* a = m.attn + i * S;
    for (std::size_t j = 0; j < S; ++j) row[j] = a[j] ? -inf : row[j];
  }
  if (m.causal)
    for (std::size_t j = i + 1; j < S; ++j) row[j] = -inf;
  const T mx = detail::row_max(row, S);
  if (mx == -inf) {
    bool dead = S > 0;
    for (std::size_t j = 0; j < S && dead; ++j) dead = row[j] == -inf;
    if (dead) {
      for (std::size_t j = 0; j < S; ++j) row[j] = T(0);
      return;
    }
  }
  for (std::size_t j = 0; j < S; ++j) row[j] = detail::fast_exp(row[j] - mx);
  const T scale = T(1) / detail::lane_sum<T>(S, [&](std::size_t j) { return row[j]; });
  for (std::size_t j = 0; j < S; ++j) row[j] *= scale;
}

// dst = keep ? src * scale : 0 over the [L, S] block of pair bh (mask indices of [B, H, L, S]).
template <typename T>
void dropout_block(const detail::DropoutMask& mask, T scale, std::size_t offset, const T* src, T* dst, std::size_t n) {
  for (std::size_t e = 0; e < n; ++e) dst[e] = mask.keep(offset + e) ? src[e] * scale : T(0);
}

// Runs body(bh, scratch) for every (batch, head) pair, split over the threads (a GEMM inside a task
// runs on its thread alone). scratch: per-thread buffers of `per_thread` T.
template <typename F>
void for_each_pair(std::size_t pairs, std::size_t per_thread, F&& body) {
  detail::parallel_for(pairs, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<char> scratch_bytes(per_thread * sizeof(double));
    for (std::size_t bh = begin; bh < end; ++bh) body(bh, scratch_bytes.data());
  });
}

template <typename T>
struct Saved {
  Dims d;
  T scale;  // 1 / sqrt(D)
  T sqrt_d;
  bool dropout;
  detail::DropoutMask mask;  // valid when dropout
  T keep_scale;              // 1 / (1 - p)
};

// Forward; probs (B * H * L * S, the weights before dropout) is kept for the backward when non-null.
template <typename T>
void attention_forward(const Saved<T>& s, const AttentionBoolMasks& masks, Slab<const T> q, Slab<const T> k,
                       Slab<const T> v, T* out, T* probs) {
  const Dims& d = s.d;
  const std::size_t LS = d.L * d.S, E = d.H * d.D;
  const std::size_t LD = d.L * d.D;
  for_each_pair(d.B * d.H, LD + (probs ? 0 : LS) + (s.dropout ? LS : 0), [&](std::size_t bh, char* scratch) {
    const std::size_t b = bh / d.H, h = bh % d.H;
    // q / sqrt(D) first, then Q K^T, exactly as the composed path rounds it (so that asking for the
    // attention weights, which takes that path, never changes the output).
    T* qs = reinterpret_cast<T*>(scratch);
    scratch = reinterpret_cast<char*>(qs + LD);
    const T* qp = q.at(b, h, d.D);
    for (std::size_t i = 0; i < d.L; ++i)
      for (std::size_t j = 0; j < d.D; ++j) qs[i * d.D + j] = qp[i * q.ld + j] / s.sqrt_d;
    T* p = probs ? probs + bh * LS : reinterpret_cast<T*>(scratch);
    blas::gemm<T>(false, true, d.L, d.S, d.D, T(1), qs, d.D, k.at(b, h, d.D), k.ld, T(0), p, d.S);
    const RowMasks rm = row_masks(masks, d, b, h);
    for (std::size_t i = 0; i < d.L; ++i) masked_softmax_row(p + i * d.S, i, d.S, rm);
    const T* weights = p;
    if (s.dropout) {
      T* dropped = reinterpret_cast<T*>(scratch) + (probs ? 0 : LS);
      dropout_block(s.mask, s.keep_scale, bh * LS, p, dropped, LS);
      weights = dropped;
    }
    blas::gemm<T>(false, false, d.L, d.D, d.S, T(1), weights, d.S, v.at(b, h, d.D), v.ld, T(0),
                  out + b * d.L * E + h * d.D, E);
  });
}

// Backward from g [B, L, E]: dq, dk, dv (any may be null) get the gradients of their slabs.
template <typename T>
void attention_backward(const Saved<T>& s, const T* g, const T* probs, Slab<const T> q, Slab<const T> k,
                        Slab<const T> v, Slab<T> dq, Slab<T> dk, Slab<T> dv) {
  const Dims& d = s.d;
  const std::size_t LS = d.L * d.S, E = d.H * d.D;
  for_each_pair(d.B * d.H, (s.dropout ? 2 : 1) * LS, [&](std::size_t bh, char* scratch) {
    const std::size_t b = bh / d.H, h = bh % d.H;
    const T* p = probs + bh * LS;
    const T* gp = g + b * d.L * E + h * d.D;
    T* dp = reinterpret_cast<T*>(scratch);
    const T* weights = p;
    if (s.dropout) {
      T* dropped = dp + LS;
      dropout_block(s.mask, s.keep_scale, bh * LS, p, dropped, LS);
      weights = dropped;
    }
    // dV = weights^T g
    if (dv.base) blas::gemm<T>(true, false, d.S, d.D, d.L, T(1), weights, d.S, gp, E, T(0), dv.at(b, h, d.D), dv.ld);
    if (!dq.base && !dk.base) return;
    // d(weights) = g V^T, back through dropout, then softmax: dS = P * (dP - sum(dP * P)).
    blas::gemm<T>(false, true, d.L, d.S, d.D, T(1), gp, E, v.at(b, h, d.D), v.ld, T(0), dp, d.S);
    if (s.dropout) dropout_block(s.mask, s.keep_scale, bh * LS, dp, dp, LS);
    for (std::size_t i = 0; i < d.L; ++i) {
      T* dr = dp + i * d.S;
      const T* pr = p + i * d.S;
      const T dot = detail::lane_sum<T>(d.S, [&](std::size_t j) { return dr[j] * pr[j]; });
      for (std::size_t j = 0; j < d.S; ++j) dr[j] = pr[j] * (dr[j] - dot);
    }
    if (dq.base)
      blas::gemm<T>(false, false, d.L, d.D, d.S, s.scale, dp, d.S, k.at(b, h, d.D), k.ld, T(0), dq.at(b, h, d.D),
                    dq.ld);
    if (dk.base)
      blas::gemm<T>(true, false, d.S, d.D, d.L, s.scale, dp, d.S, q.at(b, h, d.D), q.ld, T(0), dk.at(b, h, d.D), dk.ld);
  });
}

void check_masks(const char* op, const AttentionBoolMasks& m, const Dims& d) {
  if (m.key_padding_mask) {
    const auto& s = m.key_padding_mask->shape();
    if (m.key_padding_mask->dimension() != 2 || s[0] != d.B || s[1] != d.S)
      throw ShapeError(fmt::format("{}: key_padding_mask must be [B, S] = [{}, {}], got {}", op, d.B, d.S,
                                   format_shape(Shape(s.begin(), s.end()))));
  }
  if (m.attn_mask) {
    const auto& s = m.attn_mask->shape();
    const bool ok = (m.attn_mask->dimension() == 2 && s[0] == d.L && s[1] == d.S) ||
                    (m.attn_mask->dimension() == 3 && s[0] == d.B * d.H && s[1] == d.L && s[2] == d.S);
    if (!ok)
      throw ShapeError(
          fmt::format("{}: attn_mask must be [L, S] = [{}, {}] or [B * num_heads, L, S] = [{}, {}, {}], got {}", op,
                      d.L, d.S, d.B * d.H, d.L, d.S, format_shape(Shape(s.begin(), s.end()))));
  }
}

void check_dropout(const char* op, double p) {
  if (!(p >= 0.0 && p < 1.0))
    throw ShapeError(fmt::format("{}: dropout probability must lie in [0, 1), got {}", op, p));
}

template <typename T>
Saved<T> make_saved(const Dims& d, double p, bool training, Generator& gen) {
  const bool drop = training && p > 0.0;
  // Drawn exactly when dropout(weights, p, true, gen) would draw: one next_u64 as the call's seed.
  const detail::DropoutMask mask(drop ? gen.next_u64() : 0, drop ? p : 0.0);
  return Saved<T>{d,
                  static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.D))),
                  static_cast<T>(std::sqrt(static_cast<double>(d.D))),
                  drop,
                  mask,
                  static_cast<T>(1.0 / (1.0 - (drop ? p : 0.0)))};
}

}  // namespace

template <typename T>
Tensor<T> fused_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, std::size_t num_heads,
                          const AttentionBoolMasks& masks, double dropout_p, bool training, Generator& gen) {
  const char* op = "fused_attention";
  const Shape &sq = q.shape(), &sk = k.shape(), &sv = v.shape();
  if (sq.size() != 3 || sk.size() != 3 || sv.size() != 3 || sk != sv || sk[0] != sq[0] || sk[2] != sq[2] ||
      num_heads == 0 || sq[2] % num_heads != 0) {
    throw ShapeError(fmt::format("{}: q [B, L, E], k and v [B, S, E] with E divisible by num_heads {}, got {}, {}, {}",
                                 op, num_heads, format_shape(sq), format_shape(sk), format_shape(sv)));
  }
  check_dropout(op, dropout_p);
  const Dims d{sq[0], sq[1], sk[1], num_heads, sq[2] / num_heads};
  check_masks(op, masks, d);
  const std::size_t E = sq[2];
  const Saved<T> s = make_saved<T>(d, dropout_p, training, gen);
  const bool grad = should_record(q, k, v);
  auto probs = grad ? std::make_shared<std::vector<T>>(d.B * d.H * d.L * d.S) : nullptr;
  xt::xarray<T> y = xt::xarray<T>::from_shape({d.B, d.L, E});
  const Slab<const T> qs{q.data().data(), E, d.L * E}, ks{k.data().data(), E, d.S * E}, vs{v.data().data(), E, d.S * E};
  attention_forward(s, masks, qs, ks, vs, y.data(), probs ? probs->data() : nullptr);
  Tensor<T> out(std::move(y));
  if (grad)
    record(out, op, {q, k, v},
           [s, probs, qv = q.saved(), kv = k.saved(), vv = v.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
             const Dims& d = s.d;
             const std::size_t E = d.H * d.D;
             xt::xarray<T> dq, dk, dv;
             if (in.needs(0)) dq = xt::xarray<T>::from_shape({d.B, d.L, E});
             if (in.needs(1)) dk = xt::xarray<T>::from_shape({d.B, d.S, E});
             if (in.needs(2)) dv = xt::xarray<T>::from_shape({d.B, d.S, E});
             const auto slab = [&](xt::xarray<T>& a, std::size_t rows) {
               return Slab<T>{a.size() ? a.data() : nullptr, E, rows * E};
             };
             attention_backward(s, g.data(), probs->data(), Slab<const T>{qv->data(), E, d.L * E},
                                Slab<const T>{kv->data(), E, d.S * E}, Slab<const T>{vv->data(), E, d.S * E},
                                slab(dq, d.L), slab(dk, d.S), slab(dv, d.S));
             if (in.needs(0)) in.accumulate(0, std::move(dq));
             if (in.needs(1)) in.accumulate(1, std::move(dk));
             if (in.needs(2)) in.accumulate(2, std::move(dv));
           });
  return out;
}

template <typename T>
Tensor<T> fused_self_attention(const Tensor<T>& qkv, std::size_t num_heads, const AttentionBoolMasks& masks,
                               double dropout_p, bool training, Generator& gen) {
  const char* op = "fused_self_attention";
  const Shape& sh = qkv.shape();
  if (sh.size() != 3 || sh[2] % 3 != 0 || num_heads == 0 || (sh[2] / 3) % num_heads != 0) {
    throw ShapeError(fmt::format("{}: qkv must be [B, L, 3 E] with E divisible by num_heads {}, got {}", op, num_heads,
                                 format_shape(sh)));
  }
  check_dropout(op, dropout_p);
  const std::size_t E = sh[2] / 3, W = sh[2];
  const Dims d{sh[0], sh[1], sh[1], num_heads, E / num_heads};
  check_masks(op, masks, d);
  const Saved<T> s = make_saved<T>(d, dropout_p, training, gen);
  const bool grad = should_record(qkv);
  auto probs = grad ? std::make_shared<std::vector<T>>(d.B * d.H * d.L * d.S) : nullptr;
  xt::xarray<T> y = xt::xarray<T>::from_shape({d.B, d.L, E});
  const T* base = qkv.data().data();
  attention_forward(s, masks, Slab<const T>{base, W, d.L * W}, Slab<const T>{base + E, W, d.L * W},
                    Slab<const T>{base + 2 * E, W, d.L * W}, y.data(), probs ? probs->data() : nullptr);
  Tensor<T> out(std::move(y));
  if (grad)
    record(out, op, {qkv}, [s, probs, xv = qkv.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      const Dims& d = s.d;
      const std::size_t E = d.H * d.D, W = 3 * E;
      xt::xarray<T> dx = xt::xarray<T>::from_shape({d.B, d.L, W});
      const T* base = xv->data();
      T* dbase = dx.data();
      attention_backward(s, g.data(), probs->data(), Slab<const T>{base, W, d.L * W},
                         Slab<const T>{base + E, W, d.L * W}, Slab<const T>{base + 2 * E, W, d.L * W},
                         Slab<T>{dbase, W, d.L * W}, Slab<T>{dbase + E, W, d.L * W},
                         Slab<T>{dbase + 2 * E, W, d.L * W});
      in.accumulate(0, std::move(dx));
    });
  return out;
}

template Tensor<float> fused_attention<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&,
                                              std::size_t, const AttentionBoolMasks&, double, bool, Generator&);
template Tensor<double> fused_attention<double>(const Tensor<double>&, const Tensor<double>&, const Tensor<double>&,
                                                std::size_t, const AttentionBoolMasks&, double, bool, Generator&);
template Tensor<float> fused_self_attention<float>(const Tensor<float>&, std::size_t, const AttentionBoolMasks&, double,
                                                   bool, Generator&);
template Tensor<double> fused_self_attention<double>(const Tensor<double>&, std::size_t, const AttentionBoolMasks&,
                                                     double, bool, Generator&);

}  // namespace tapegrad
