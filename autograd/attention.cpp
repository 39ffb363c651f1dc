#include "tapegrad/autograd/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tapegrad/autograd/blas.hpp"
#include "tapegrad/autograd/dropout.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {

struct Dims {
  std::size_t B, H, L, S, D, Dv;
};

// Where head h of batch b of an operand starts (offset + b * batch_stride + h * head_stride, in
// elements) and how far apart its rows are: the same kernel reads [B, H, L, D] tensors, [B, L, H * D]
// projections and the packed [B, L, 3 E] one.
struct Layout {
  std::size_t offset, ld, batch_stride, head_stride;
  std::size_t at(std::size_t b, std::size_t h) const { return offset + b * batch_stride + h * head_stride; }
};

// An operand: which of the op's input tensors holds it, and where.
struct Operand {
  std::size_t input;
  Layout layout;
};

// Queries and keys per block: a [kBlockQ, kBlockK] block of scores stays in the L2 cache.
constexpr std::size_t kBlockQ = 64, kBlockK = 256;

// Everything the forward and the backward share; copied into the closures (the masks are shared).
template <typename T>
struct Plan {
  Dims d;
  T scale;
  bool causal;
  bool dropout;
  detail::DropoutMask mask;
  T keep_scale;  // 1 / (1 - p); 0 for p = 1, which keeps nothing
  AttentionMasks<T> masks;
  Operand q, k, v;
  Layout out;
  // Per batch: keys at or past key_end[b] are masked for every query by the key padding (bool true or
  // -inf), so the kernels stop there: their weights are exactly 0 and they take no gradient. Padded
  // batches cost what their real length costs.
  std::vector<std::size_t> key_end;
  // Per batch: whether the key padding changes any score before key_end (else it is skipped there).
  std::vector<char> padding_inside;
  // bfloat16 products under autocast (autograd/autocast.hpp), decided at the forward, kept for backward.
  blas::Precision precision = blas::Precision::Float32;
};

// key_end of the Plan: one past the last key that key_padding_mask / key_padding_bias leave visible.
template <typename T>
std::vector<std::size_t> visible_key_end(const AttentionMasks<T>& m, std::size_t B, std::size_t S) {
  std::vector<std::size_t> end(B, S);
  for (std::size_t b = 0; b < B; ++b) {
    std::size_t j = S;
    const auto dead = [&](std::size_t key) {
      return (m.key_padding_mask && m.key_padding_mask->data()[b * S + key]) ||
             (m.key_padding_bias && m.key_padding_bias->data()[b * S + key] == -std::numeric_limits<T>::infinity());
    };
    while (j > 0 && dead(j - 1)) --j;
    end[b] = j;
  }
  return end;
}

// padding_inside of the Plan, for key_end.
template <typename T>
std::vector<char> padding_before(const AttentionMasks<T>& m, const std::vector<std::size_t>& key_end, std::size_t S) {
  std::vector<char> inside(key_end.size(), 0);
  for (std::size_t b = 0; b < key_end.size(); ++b)
    for (std::size_t j = 0; j < key_end[b] && !inside[b]; ++j)
      inside[b] = (m.key_padding_mask && m.key_padding_mask->data()[b * S + j]) ||
                  (m.key_padding_bias && m.key_padding_bias->data()[b * S + j] != T(0));
  return inside;
}

template <typename T>
const T* operand_ptr(const std::vector<const T*>& bases, const Operand& o, std::size_t b, std::size_t h) {
  return bases[o.input] + o.layout.at(b, h);
}

// One (batch, head) pair's view of an operand, rows ld apart. Under autocast it is a dense bfloat16 copy
// made once for the pair (or the block), which all of its block products read: converted inside each
// block product instead, every key block was converted once per query block (a third of a bfloat16
// training step). Without autocast, the float values in place.
template <typename T>
struct PairView {
  blas::Operand<T> data;
  std::size_t ld;
  blas::Operand<T> row(std::size_t i) const { return data + i * ld; }
};

// Which of a thread's bfloat16 copies a view uses: the copies of one pair must not overwrite each other.
enum class Copy { q, k, v, grad, block };

template <typename T>
PairView<T> pair_view(const Plan<T>& p, const T* x, std::size_t rows, std::size_t cols, std::size_t ld, Copy copy) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.precision == blas::Precision::BFloat16) {
      thread_local std::vector<bfloat16> copies[5];
      std::vector<bfloat16>& c = copies[static_cast<int>(copy)];
      c.resize(rows * cols);
      for (std::size_t r = 0; r < rows; ++r) to_bfloat16(x + r * ld, c.data() + r * cols, cols);
      return {blas::Operand<T>(c.data()), cols};
    }
  }
  return {blas::Operand<T>(x), ld};
}

// Raw views of the masks for one (batch, head) pair.
template <typename T>
struct PairMasks {
  const bool* attn = nullptr;  // [L, S]
  const T* bias = nullptr;     // [L, S]
  const bool* kpm = nullptr;   // [S]
  const T* kpb = nullptr;      // [S]
};

// up_to_key_end: the caller stops at p.key_end[b], so key padding that masks nothing before it is left
// out.
template <typename T>
PairMasks<T> pair_masks(const Plan<T>& p, std::size_t b, std::size_t h, bool up_to_key_end) {
  const Dims& d = p.d;
  const std::size_t LS = d.L * d.S, bh = b * d.H + h;
  PairMasks<T> m;
  if (p.masks.attn_mask) m.attn = p.masks.attn_mask->data() + (p.masks.attn_mask->dimension() > 2 ? bh * LS : 0);
  if (p.masks.attn_bias) m.bias = p.masks.attn_bias->data() + (p.masks.attn_bias->dimension() > 2 ? bh * LS : 0);
  if (!up_to_key_end || p.padding_inside[b]) {
    if (p.masks.key_padding_mask) m.kpm = p.masks.key_padding_mask->data() + b * d.S;
    if (p.masks.key_padding_bias) m.kpb = p.masks.key_padding_bias->data() + b * d.S;
  }
  return m;
}

// Rows of a score block are padded to a multiple of this many columns (the lanes of detail::lane_sum
// and row_max), the padding set to -inf: weight exp(-inf) = 0 exactly, so the row loops need no scalar
// remainder (which cost a third of the exponentials' time when lengths were not multiples of 16).
constexpr std::size_t kPad = detail::kLanes;
std::size_t padded(std::size_t n) { return (n + kPad - 1) / kPad * kPad; }

// s[bi, bj] (row stride lds >= bj) = scaled scores of queries i0.. against keys j0.., masked: float masks
// added (attn_mask first, then key padding, as torch adds them), bool masks and causality -> -inf;
// columns bj..lds are -inf. The queries are read in place (the scale is the product's alpha).
template <typename T>
void score_block(const Plan<T>& p, const PairMasks<T>& m, const PairView<T>& q, const PairView<T>& k, std::size_t i0,
                 std::size_t bi, std::size_t j0, std::size_t bj, T* s, std::size_t lds) {
  const Dims& d = p.d;
  blas::gemm<T>(false, true, bi, bj, d.D, p.scale, q.row(i0), q.ld, k.row(j0), k.ld, T(0), s, lds, p.precision);
  const T inf = std::numeric_limits<T>::infinity();
  for (std::size_t r = 0; r < bi; ++r) {
    T* __restrict row = s + r * lds;
    std::fill(row + bj, row + lds, -inf);
    const std::size_t i = i0 + r;
    if (m.bias) {
      const T* __restrict a = m.bias + i * d.S + j0;
      for (std::size_t c = 0; c < bj; ++c) row[c] += a[c];
    }
    if (m.kpb) {
      const T* __restrict a = m.kpb + j0;
      for (std::size_t c = 0; c < bj; ++c) row[c] += a[c];
    }
    if (m.attn) {
      const bool* __restrict a = m.attn + i * d.S + j0;
      for (std::size_t c = 0; c < bj; ++c) row[c] = a[c] ? -inf : row[c];
    }
    if (m.kpm) {
      const bool* __restrict a = m.kpm + j0;
      for (std::size_t c = 0; c < bj; ++c) row[c] = a[c] ? -inf : row[c];
    }
    if (p.causal)
      for (std::size_t c = i + 1 > j0 ? i + 1 - j0 : 0; c < bj; ++c) row[c] = -inf;
  }
}

// dst rows [0, rows) (row stride ld) = src [rows, cols] contiguous times scale, or plus it when add.
template <typename T>
void scaled_rows_out(const T* src, std::size_t rows, std::size_t cols, T scale, bool add, T* dst, std::size_t ld) {
  const T s = scale;
  for (std::size_t r = 0; r < rows; ++r) {
    const T* __restrict a = src + r * cols;
    T* __restrict o = dst + r * ld;
    if (add)
      for (std::size_t c = 0; c < cols; ++c) o[c] += a[c] * s;
    else
      for (std::size_t c = 0; c < cols; ++c) o[c] = a[c] * s;
  }
}

// In place: w = keep ? w / (1 - p) : 0 over a [bi, bj] block (row stride ld), mask indices of
// [B, H, L, S]; with factors_only, w = keep ? 1 / (1 - p) : 0 (the mask's factors, for several uses).
template <typename T>
void drop_block(const Plan<T>& p, std::size_t bh, std::size_t i0, std::size_t bi, std::size_t j0, std::size_t bj, T* w,
                std::size_t ld, bool factors_only = false) {
  const Dims& d = p.d;
  for (std::size_t r = 0; r < bi; ++r) {
    const std::size_t first = (bh * d.L + i0 + r) * d.S + j0;
    if (factors_only)
      p.mask.factors(w + r * ld, p.keep_scale, first, bj);
    else
      p.mask.apply(w + r * ld, w + r * ld, p.keep_scale, first, bj);
  }
}

// Runs body(b, h, scratch) for every (batch, head) pair, split over the threads; each thread reuses
// one scratch buffer of `scratch` T. One pair is computed by one thread in a fixed order, so the
// results do not depend on the thread count.
template <typename T, typename F>
void for_each_pair(const Dims& d, std::size_t scratch, F&& body) {
  detail::parallel_for(d.B * d.H, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<T> buf(scratch);
    for (std::size_t bh = begin; bh < end; ++bh) body(bh / d.H, bh % d.H, buf.data());
  });
}

// Forward, FlashAttention-2 style: per block of queries, a running maximum m, a running sum l and an
// unnormalized output are updated key block by key block. Writes the output and each query's
// log-sum-exp (+inf for a query that sees no key: its weights are then exp(s - lse) = 0).
template <typename T>
void flash_forward(const Plan<T>& p, const std::vector<const T*>& in, T* out, T* lse) {
  const Dims& d = p.d;
  const T inf = std::numeric_limits<T>::infinity();
  const std::size_t scratch = kBlockQ * kBlockK + kBlockQ * d.Dv + 2 * kBlockQ;
  for_each_pair<T>(d, scratch, [&](std::size_t b, std::size_t h, T* buf) {
    T* s = buf;
    T* acc = s + kBlockQ * kBlockK;
    T* mx = acc + kBlockQ * d.Dv;
    T* sum = mx + kBlockQ;
    const std::size_t bh = b * d.H + h;
    const PairView<T> q = pair_view(p, operand_ptr(in, p.q, b, h), d.L, d.D, p.q.layout.ld, Copy::q);
    const PairView<T> k = pair_view(p, operand_ptr(in, p.k, b, h), p.key_end[b], d.D, p.k.layout.ld, Copy::k);
    const PairView<T> v = pair_view(p, operand_ptr(in, p.v, b, h), p.key_end[b], d.Dv, p.v.layout.ld, Copy::v);
    const PairMasks<T> m = pair_masks(p, b, h, true);
    T* op = out + p.out.at(b, h);
    for (std::size_t i0 = 0; i0 < d.L; i0 += kBlockQ) {
      const std::size_t bi = std::min(kBlockQ, d.L - i0);
      std::fill(mx, mx + bi, -inf);
      std::fill(sum, sum + bi, T(0));
      std::fill(acc, acc + bi * d.Dv, T(0));
      // With causality, no query of this block sees a key past its last query.
      const std::size_t j_end = std::min(p.key_end[b], p.causal ? std::min(d.S, i0 + bi) : d.S);
      for (std::size_t j0 = 0; j0 < j_end; j0 += kBlockK) {
        const std::size_t bj = std::min(kBlockK, j_end - j0), ld = padded(bj);
        score_block(p, m, q, k, i0, bi, j0, bj, s, ld);
        for (std::size_t r = 0; r < bi; ++r) {
          T* __restrict row = s + r * ld;
          const T m_new = std::max(mx[r], detail::row_max(row, ld));
          if (m_new == -inf) {  // nothing visible to this query yet
            std::fill(row, row + ld, T(0));
            continue;
          }
          const T alpha = detail::fast_exp(mx[r] - m_new);
          // The exponentials and their sum in one pass.
          const T row_sum = detail::lane_sum<T>(ld, [&](std::size_t c) {
            const T e = detail::fast_exp(row[c] - m_new);
            row[c] = e;
            return e;
          });
          sum[r] = sum[r] * alpha + row_sum;
          if (alpha != T(1)) {
            T* __restrict a = acc + r * d.Dv;
            for (std::size_t c = 0; c < d.Dv; ++c) a[c] *= alpha;
          }
          mx[r] = m_new;
        }
        if (p.dropout) drop_block(p, bh, i0, bi, j0, bj, s, ld);
        blas::gemm<T>(false, false, bi, d.Dv, bj, T(1), s, ld, v.row(j0), v.ld, T(1), acc, d.Dv, p.precision);
      }
      for (std::size_t r = 0; r < bi; ++r) {
        const bool dead = mx[r] == -inf;
        scaled_rows_out(acc + r * d.Dv, 1, d.Dv, dead ? T(0) : T(1) / sum[r], false, op + (i0 + r) * p.out.ld, 0);
        lse[bh * d.L + i0 + r] = dead ? inf : mx[r] + std::log(sum[r]);
      }
    }
  });
}

// The attention weights [B, H, L, S] (after dropout), from the log-sum-exp of the forward.
template <typename T>
void weights_forward(const Plan<T>& p, const std::vector<const T*>& in, const T* lse, T* w) {
  const Dims& d = p.d;
  for_each_pair<T>(d, 0, [&](std::size_t b, std::size_t h, T*) {
    const std::size_t bh = b * d.H + h;
    const PairView<T> q = pair_view(p, operand_ptr(in, p.q, b, h), d.L, d.D, p.q.layout.ld, Copy::q);
    const PairView<T> k = pair_view(p, operand_ptr(in, p.k, b, h), d.S, d.D, p.k.layout.ld, Copy::k);
    const PairMasks<T> m = pair_masks(p, b, h, false);
    for (std::size_t i0 = 0; i0 < d.L; i0 += kBlockQ) {
      const std::size_t bi = std::min(kBlockQ, d.L - i0);
      T* s = w + (bh * d.L + i0) * d.S;
      score_block(p, m, q, k, i0, bi, 0, d.S, s, d.S);
      for (std::size_t r = 0; r < bi; ++r) {
        const T l = lse[bh * d.L + i0 + r];
        T* __restrict row = s + r * d.S;
        for (std::size_t c = 0; c < d.S; ++c) row[c] = detail::fast_exp(row[c] - l);
      }
      if (p.dropout) drop_block(p, bh, i0, bi, 0, d.S, s, d.S);
    }
  });
}

// Gradient pointers of q, k and v (null where not wanted), in the layouts of the operands.
template <typename T>
struct GradPtrs {
  T *dq, *dk, *dv;
};

// An input that needs no gradient keeps a default array, which is 0-d with one element (q, k and v
// have 3 or 4 dims): no pointer for it, nor for an empty gradient.
template <typename T>
T* grad_ptr(std::vector<xt::xarray<T>>& grads, const Operand& o) {
  xt::xarray<T>& g = grads[o.input];
  return g.dimension() != 0 && g.size() != 0 ? g.data() : nullptr;
}

// The weights of a [bi, bj] block (row stride ld) for the backward: s holds the scores on entry and
// P = exp(s - lse) on return; with dropout, keep gets the mask's factors and w = P * keep, which is
// returned (else s is).
template <typename T>
const T* block_weights(const Plan<T>& p, std::size_t bh, std::size_t i0, std::size_t bi, std::size_t j0, std::size_t bj,
                       std::size_t ld, const T* lse, T* s, T* keep, T* w) {
  for (std::size_t r = 0; r < bi; ++r) {
    const T l = lse[bh * p.d.L + i0 + r];
    T* __restrict row = s + r * ld;
    for (std::size_t c = 0; c < ld; ++c) row[c] = detail::fast_exp(row[c] - l);
  }
  if (!p.dropout) return s;
  // The mask's factors once per block, for W and for dP.
  drop_block(p, bh, i0, bi, j0, bj, keep, ld, /*factors_only=*/true);
  for (std::size_t r = 0; r < bi; ++r) {
    const T* __restrict pk = keep + r * ld;
    const T* __restrict ps = s + r * ld;
    T* __restrict pw = w + r * ld;
    for (std::size_t c = 0; c < bj; ++c) pw[c] = ps[c] * pk[c];
  }
  return w;
}

// In place over a [bi, bj] block (row stride ld): dp = P * (dropout(dP) - delta), P in s, the dropout
// factors in keep.
template <typename T>
void block_score_grad(const Plan<T>& p, std::size_t bi, std::size_t bj, std::size_t ld, const T* s, const T* keep,
                      const T* delta, T* dp) {
  for (std::size_t r = 0; r < bi; ++r) {
    T* __restrict dr = dp + r * ld;
    const T* __restrict pr = s + r * ld;
    const T* __restrict kr = keep + r * ld;
    const T dl = delta[r];
    if (p.dropout)
      for (std::size_t c = 0; c < bj; ++c) dr[c] = pr[c] * (dr[c] * kr[c] - dl);
    else
      for (std::size_t c = 0; c < bj; ++c) dr[c] = pr[c] * (dr[c] - dl);
  }
}

// Backward of the output, FlashAttention-2 style: per block of keys, the blocks of queries that see
// it; the weights are recomputed from the scores and the log-sum-exp, the dropout mask from its rule.
// With W = dropout(P) and O = W V: dV = W^T dO, dP = dropout(dO V^T), dS = P * (dP - delta) where
// delta = rowsum(dP * P) = rowsum(dO * O), then dQ = scale dS K and dK = dS^T (scale Q).
template <typename T>
void flash_backward(const Plan<T>& p, const std::vector<const T*>& in, const T* out, const T* g, const T* lse,
                    GradPtrs<T> grads) {
  const Dims& d = p.d;
  const std::size_t block = kBlockQ * kBlockK;
  const std::size_t scratch = d.L * d.D + d.L + 4 * block + kBlockK * (d.D + d.Dv);
  for_each_pair<T>(d, scratch, [&](std::size_t b, std::size_t h, T* buf) {
    T* dq = buf;  // [L, D]
    T* delta = dq + d.L * d.D;
    T* s = delta + d.L;          // scores, then P
    T* w = s + block;            // dropout(P)
    T* dp = w + block;           // dP, then dS
    T* keep = dp + block;        // the dropout mask's factors: 1 / (1 - p) or 0
    T* dk = keep + block;        // [kBlockK, D]
    T* dv = dk + kBlockK * d.D;  // [kBlockK, Dv]
    const std::size_t bh = b * d.H + h;
    const std::size_t gld = p.out.ld, qld = p.q.layout.ld, kld = p.k.layout.ld, vld = p.v.layout.ld;
    const PairView<T> q = pair_view(p, operand_ptr(in, p.q, b, h), d.L, d.D, qld, Copy::q);
    const PairView<T> k = pair_view(p, operand_ptr(in, p.k, b, h), p.key_end[b], d.D, kld, Copy::k);
    const PairView<T> v = pair_view(p, operand_ptr(in, p.v, b, h), p.key_end[b], d.Dv, vld, Copy::v);
    const T* op = out + p.out.at(b, h);
    const T* gp = g + p.out.at(b, h);
    const PairView<T> gv = pair_view(p, gp, d.L, d.Dv, gld, Copy::grad);
    const PairMasks<T> m = pair_masks(p, b, h, true);
    std::fill(dq, dq + d.L * d.D, T(0));
    for (std::size_t i = 0; i < d.L; ++i) {
      const T* __restrict o = op + i * gld;
      const T* __restrict gi = gp + i * gld;
      delta[i] = detail::lane_sum<T>(d.Dv, [&](std::size_t c) { return o[c] * gi[c]; });
    }
    const std::size_t key_end = p.key_end[b];
    for (std::size_t j0 = 0; j0 < key_end; j0 += kBlockK) {
      const std::size_t bj = std::min(kBlockK, key_end - j0);
      std::fill(dk, dk + bj * d.D, T(0));
      std::fill(dv, dv + bj * d.Dv, T(0));
      const std::size_t ld = padded(bj);  // the row stride of the blocks
      for (std::size_t i0 = 0; i0 < d.L; i0 += kBlockQ) {
        const std::size_t bi = std::min(kBlockQ, d.L - i0);
        if (p.causal && i0 + bi <= j0) continue;  // every query of the block is before every key
        score_block(p, m, q, k, i0, bi, j0, bj, s, ld);
        const T* wp = block_weights(p, bh, i0, bi, j0, bj, ld, lse, s, keep, w);
        if (grads.dv)
          blas::gemm<T>(true, false, bj, d.Dv, bi, T(1), wp, ld, gv.row(i0), gv.ld, T(1), dv, d.Dv, p.precision);
        if (!grads.dq && !grads.dk) continue;
        blas::gemm<T>(false, true, bi, bj, d.Dv, T(1), gv.row(i0), gv.ld, v.row(j0), v.ld, T(0), dp, ld, p.precision);
        block_score_grad(p, bi, bj, ld, s, keep, delta + i0, dp);
        const PairView<T> ds = pair_view(p, static_cast<const T*>(dp), bi, bj, ld, Copy::block);  // read twice
        if (grads.dq)
          blas::gemm<T>(false, false, bi, d.D, bj, T(1), ds.data, ds.ld, k.row(j0), k.ld, T(1), dq + i0 * d.D, d.D,
                        p.precision);
        if (grads.dk)
          blas::gemm<T>(true, false, bj, d.D, bi, p.scale, ds.data, ds.ld, q.row(i0), q.ld, T(1), dk, d.D, p.precision);
      }
      if (grads.dk) scaled_rows_out(dk, bj, d.D, T(1), false, grads.dk + p.k.layout.at(b, h) + j0 * kld, kld);
      if (grads.dv) scaled_rows_out(dv, bj, d.Dv, T(1), false, grads.dv + p.v.layout.at(b, h) + j0 * vld, vld);
    }
    // The keys past key_end take no gradient.
    for (std::size_t j = key_end; j < d.S; ++j) {
      if (grads.dk) std::fill_n(grads.dk + p.k.layout.at(b, h) + j * kld, d.D, T(0));
      if (grads.dv) std::fill_n(grads.dv + p.v.layout.at(b, h) + j * vld, d.Dv, T(0));
    }
    if (grads.dq) scaled_rows_out(dq, d.L, d.D, p.scale, false, grads.dq + p.q.layout.at(b, h), qld);
  });
}

// Backward of the returned weights W = dropout(P): dP = dropout(dW), dS = P * (dP - rowsum(dP * P)),
// then dQ and dK as above (v gets none). Adds into grads.dq / grads.dk.
template <typename T>
void weights_backward(const Plan<T>& p, const std::vector<const T*>& in, const T* gw, const T* lse, GradPtrs<T> grads) {
  const Dims& d = p.d;
  const std::size_t scratch = d.L * d.D + d.S * d.D + 2 * kBlockQ * d.S;
  for_each_pair<T>(d, scratch, [&](std::size_t b, std::size_t h, T* buf) {
    T* dq = buf;
    T* dk = dq + d.L * d.D;
    T* s = dk + d.S * d.D;
    T* dp = s + kBlockQ * d.S;
    const std::size_t bh = b * d.H + h;
    const std::size_t qld = p.q.layout.ld, kld = p.k.layout.ld;
    const PairView<T> q = pair_view(p, operand_ptr(in, p.q, b, h), d.L, d.D, qld, Copy::q);
    const PairView<T> k = pair_view(p, operand_ptr(in, p.k, b, h), d.S, d.D, kld, Copy::k);
    const PairMasks<T> m = pair_masks(p, b, h, false);
    std::fill(dq, dq + d.L * d.D, T(0));
    std::fill(dk, dk + d.S * d.D, T(0));
    for (std::size_t i0 = 0; i0 < d.L; i0 += kBlockQ) {
      const std::size_t bi = std::min(kBlockQ, d.L - i0);
      score_block(p, m, q, k, i0, bi, 0, d.S, s, d.S);
      std::copy(gw + (bh * d.L + i0) * d.S, gw + (bh * d.L + i0 + bi) * d.S, dp);
      if (p.dropout) drop_block(p, bh, i0, bi, 0, d.S, dp, d.S);
      for (std::size_t r = 0; r < bi; ++r) {
        const T l = lse[bh * d.L + i0 + r];
        T* __restrict pr = s + r * d.S;
        T* __restrict dr = dp + r * d.S;
        for (std::size_t c = 0; c < d.S; ++c) pr[c] = detail::fast_exp(pr[c] - l);
        const T dot = detail::lane_sum<T>(d.S, [&](std::size_t c) { return dr[c] * pr[c]; });
        for (std::size_t c = 0; c < d.S; ++c) dr[c] = pr[c] * (dr[c] - dot);
      }
      const PairView<T> ds = pair_view(p, static_cast<const T*>(dp), bi, d.S, d.S, Copy::block);  // read twice
      if (grads.dq)
        blas::gemm<T>(false, false, bi, d.D, d.S, T(1), ds.data, ds.ld, k.data, k.ld, T(1), dq + i0 * d.D, d.D,
                      p.precision);
      if (grads.dk)
        blas::gemm<T>(true, false, d.S, d.D, bi, p.scale, ds.data, ds.ld, q.row(i0), q.ld, T(1), dk, d.D, p.precision);
    }
    if (grads.dq) scaled_rows_out(dq, d.L, d.D, p.scale, true, grads.dq + p.q.layout.at(b, h), qld);
    if (grads.dk) scaled_rows_out(dk, d.S, d.D, T(1), true, grads.dk + p.k.layout.at(b, h), kld);
  });
}

template <typename T>
void check_masks(const char* op, const AttentionMasks<T>& m, const Dims& d) {
  const auto check_attn = [&](const char* name, const auto& a) {
    if (!a) return;
    const auto& s = a->shape();
    const bool ok = (s.size() == 2 && s[0] == d.L && s[1] == d.S) ||
                    (s.size() == 3 && s[0] == d.B * d.H && s[1] == d.L && s[2] == d.S) ||
                    (s.size() == 4 && s[0] == d.B && s[1] == d.H && s[2] == d.L && s[3] == d.S);
    if (!ok)
      throw ShapeError(fmt::format(
          "{}: {} must be [L, S] = [{}, {}], [B * H, L, S] = [{}, {}, {}] or [B, H, L, S] = "
          "[{}, {}, {}, {}], got {}",
          op, name, d.L, d.S, d.B * d.H, d.L, d.S, d.B, d.H, d.L, d.S, format_shape(Shape(s.begin(), s.end()))));
  };
  const auto check_kpm = [&](const char* name, const auto& a) {
    if (!a) return;
    const auto& s = a->shape();
    if (s.size() != 2 || s[0] != d.B || s[1] != d.S)
      throw ShapeError(fmt::format("{}: {} must be [B, S] = [{}, {}], got {}", op, name, d.B, d.S,
                                   format_shape(Shape(s.begin(), s.end()))));
  };
  check_attn("attn_mask", m.attn_mask);
  check_attn("attn_bias", m.attn_bias);
  check_kpm("key_padding_mask", m.key_padding_mask);
  check_kpm("key_padding_bias", m.key_padding_bias);
}

// The plan of one call, after checking its arguments (the shapes of q, k and v are the caller's).
template <typename T>
Plan<T> attention_plan(const char* op, const Dims& d, const Operand& q, const Operand& k, const Operand& v,
                       const Layout& out_layout, const AttentionMasks<T>& masks, double dropout_p, bool is_causal,
                       std::optional<double> scale, Generator* gen) {
  if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
    throw ShapeError(fmt::format("{}: dropout probability must lie in [0, 1], got {}", op, dropout_p));
  if (dropout_p > 0.0 && !gen)
    throw std::invalid_argument(fmt::format("{}: dropout_p = {} needs a generator, got none", op, dropout_p));
  if (scale && !std::isfinite(*scale))
    throw std::invalid_argument(fmt::format("{}: scale must be finite, got {}", op, *scale));
  check_masks(op, masks, d);
  const bool drop = dropout_p > 0.0;
  // Drawn exactly when dropout(weights, p, true, gen) would draw: one next_u64 as the call's seed,
  // none for p = 1, whose mask keeps nothing whatever the seed.
  const detail::DropoutMask mask(drop && dropout_p < 1.0 ? gen->next_u64() : 0, drop ? dropout_p : 0.0);
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d.D));
  Plan<T> plan{d,          static_cast<T>(sc),
               is_causal,  drop,
               mask,       static_cast<T>(dropout_p < 1.0 ? 1.0 / (1.0 - dropout_p) : 0.0),
               masks,      q,
               k,          v,
               out_layout, visible_key_end(masks, d.B, d.S),
               {}};
  plan.padding_inside = padding_before(masks, plan.key_end, d.S);
  plan.precision = blas::autocast_precision<T>();
  return plan;
}

// The one implementation behind the three entry points: checks, forward, and the backward closures
// (of the output and, when asked for, of the weights).
template <typename T>
std::pair<Tensor<T>, Tensor<T>> attention(const char* op, const std::vector<Tensor<T>>& inputs, const Dims& d,
                                          const Operand& q, const Operand& k, const Operand& v, const Shape& out_shape,
                                          const Layout& out_layout, const AttentionMasks<T>& masks, double dropout_p,
                                          bool is_causal, std::optional<double> scale, bool need_weights,
                                          Generator* gen) {
  const Plan<T> plan = attention_plan(op, d, q, k, v, out_layout, masks, dropout_p, is_causal, scale, gen);
  std::vector<const T*> bases;
  for (const auto& x : inputs) bases.push_back(x.data().data());
  auto lse = std::make_shared<std::vector<T>>(d.B * d.H * d.L);
  xt::xarray<T> y = xt::xarray<T>::from_shape(out_shape);
  if (y.size()) flash_forward(plan, bases, y.data(), lse->data());
  Tensor<T> out(std::move(y));
  Tensor<T> weights;
  if (need_weights) {
    xt::xarray<T> w = xt::xarray<T>::from_shape({d.B, d.H, d.L, d.S});
    if (w.size()) weights_forward(plan, bases, lse->data(), w.data());
    weights = Tensor<T>(std::move(w));
  }
  if (!should_record(inputs)) return {out, weights};

  std::vector<std::shared_ptr<const xt::xarray<T>>> saved;
  for (const auto& x : inputs) saved.push_back(x.saved());
  // The gradient arrays of the inputs that need one, and the q / k / v pointers into them.
  const auto make_grads = [](const std::vector<std::shared_ptr<const xt::xarray<T>>>& saved, GradInputs<T>& in,
                             bool zero) {
    std::vector<xt::xarray<T>> grads(saved.size());
    for (std::size_t i = 0; i < saved.size(); ++i)
      if (in.needs(i))
        grads[i] = zero ? xt::xarray<T>(xt::zeros<T>(saved[i]->shape())) : xt::xarray<T>::from_shape(saved[i]->shape());
    return grads;
  };
  const auto pointers = [](const std::vector<std::shared_ptr<const xt::xarray<T>>>& saved) {
    std::vector<const T*> p;
    for (const auto& s : saved) p.push_back(s->data());
    return p;
  };
  record(out, op, inputs,
         [plan, saved, lse, out_val = out.saved(), make_grads, pointers](const xt::xarray<T>& g, GradInputs<T>& in) {
           auto grads = make_grads(saved, in, false);
           if (plan.d.L * plan.d.S * plan.d.B * plan.d.H == 0) {
             for (auto& x : grads) std::fill(x.begin(), x.end(), T(0));
           } else {
             flash_backward(plan, pointers(saved), out_val->data(), g.data(), lse->data(),
                            GradPtrs<T>{grad_ptr(grads, plan.q), grad_ptr(grads, plan.k), grad_ptr(grads, plan.v)});
           }
           for (std::size_t i = 0; i < grads.size(); ++i)
             if (in.needs(i)) in.accumulate(i, std::move(grads[i]));
         });
  if (need_weights)
    record(weights, op, inputs, [plan, saved, lse, make_grads, pointers](const xt::xarray<T>& g, GradInputs<T>& in) {
      auto grads = make_grads(saved, in, true);
      if (g.size())
        weights_backward(plan, pointers(saved), g.data(), lse->data(),
                         GradPtrs<T>{grad_ptr(grads, plan.q), grad_ptr(grads, plan.k), nullptr});
      for (std::size_t i = 0; i < grads.size(); ++i)
        if (in.needs(i)) in.accumulate(i, std::move(grads[i]));
    });
  return {out, weights};
}

}  // namespace

template <typename T>
std::pair<Tensor<T>, Tensor<T>> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                             const AttentionMasks<T>& masks, double dropout_p,
                                                             bool is_causal, std::optional<double> scale,
                                                             bool need_weights, Generator* gen) {
  const char* op = "scaled_dot_product_attention";
  const Shape &sq = q.shape(), &sk = k.shape(), &sv = v.shape();
  const std::size_t n = sq.size();
  const bool ok = (n == 3 || n == 4) && sk.size() == n && sv.size() == n &&
                  std::equal(sq.begin(), sq.end() - 2, sk.begin()) &&
                  std::equal(sq.begin(), sq.end() - 2, sv.begin()) && sk[n - 1] == sq[n - 1] && sv[n - 2] == sk[n - 2];
  if (!ok)
    throw ShapeError(
        fmt::format("{}: q [B, H, L, D], k [B, H, S, D], v [B, H, S, Dv] (or 3-d [N, ., .]), got {}, {}, {}", op,
                    format_shape(sq), format_shape(sk), format_shape(sv)));
  const std::size_t B = sq[0], H = n == 4 ? sq[1] : 1, L = sq[n - 2], S = sk[n - 2], D = sq[n - 1], Dv = sv[n - 1];
  const Dims d{B, H, L, S, D, Dv};
  const auto layout = [&](std::size_t rows, std::size_t cols) { return Layout{0, cols, H * rows * cols, rows * cols}; };
  Shape out_shape = sq;
  out_shape[n - 1] = Dv;
  return attention<T>(op, {q, k, v}, d, Operand{0, layout(L, D)}, Operand{1, layout(S, D)}, Operand{2, layout(S, Dv)},
                      out_shape, layout(L, Dv), masks, dropout_p, is_causal, scale, need_weights, gen);
}

template <typename T>
std::pair<Tensor<T>, Tensor<T>> multi_head_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                     std::size_t num_heads, const AttentionMasks<T>& masks,
                                                     double dropout_p, bool is_causal, std::optional<double> scale,
                                                     bool need_weights, Generator* gen) {
  const char* op = "multi_head_attention";
  const Shape &sq = q.shape(), &sk = k.shape(), &sv = v.shape();
  const std::size_t H = num_heads;
  if (sq.size() != 3 || sk.size() != 3 || sv.size() != 3 || sk[0] != sq[0] || sv[0] != sq[0] || sk[1] != sv[1] ||
      sk[2] != sq[2] || H == 0 || sq[2] % H != 0 || sv[2] % H != 0) {
    throw ShapeError(
        fmt::format("{}: q [B, L, E], k [B, S, E], v [B, S, Ev] with E and Ev divisible by num_heads {}, "
                    "got {}, {}, {}",
                    op, num_heads, format_shape(sq), format_shape(sk), format_shape(sv)));
  }
  const std::size_t B = sq[0], L = sq[1], S = sk[1], E = sq[2], Ev = sv[2];
  const Dims d{B, H, L, S, E / H, Ev / H};
  return attention<T>(op, {q, k, v}, d, Operand{0, Layout{0, E, L * E, d.D}}, Operand{1, Layout{0, E, S * E, d.D}},
                      Operand{2, Layout{0, Ev, S * Ev, d.Dv}}, Shape{B, L, Ev}, Layout{0, Ev, L * Ev, d.Dv}, masks,
                      dropout_p, is_causal, scale, need_weights, gen);
}

template <typename T>
std::pair<Tensor<T>, Tensor<T>> multi_head_self_attention(const Tensor<T>& qkv, std::size_t num_heads,
                                                          const AttentionMasks<T>& masks, double dropout_p,
                                                          bool is_causal, std::optional<double> scale,
                                                          bool need_weights, Generator* gen) {
  const char* op = "multi_head_self_attention";
  const Shape& sh = qkv.shape();
  if (sh.size() != 3 || sh[2] % 3 != 0 || num_heads == 0 || (sh[2] / 3) % num_heads != 0) {
    throw ShapeError(fmt::format("{}: qkv must be [B, L, 3 E] with E divisible by num_heads {}, got {}", op, num_heads,
                                 format_shape(sh)));
  }
  const std::size_t B = sh[0], L = sh[1], W = sh[2], E = W / 3, H = num_heads, D = E / H;
  const Dims d{B, H, L, L, D, D};
  return attention<T>(op, {qkv}, d, Operand{0, Layout{0, W, L * W, D}}, Operand{0, Layout{E, W, L * W, D}},
                      Operand{0, Layout{2 * E, W, L * W, D}}, Shape{B, L, E}, Layout{0, E, L * E, D}, masks, dropout_p,
                      is_causal, scale, need_weights, gen);
}

TAPEGRAD_INSTANTIATE(scaled_dot_product_attention);
TAPEGRAD_INSTANTIATE(multi_head_attention);
TAPEGRAD_INSTANTIATE(multi_head_self_attention);

}  // namespace tapegrad
