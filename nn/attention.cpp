#include "tapegrad/nn/attention.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "tapegrad/autograd/dropout.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/fused_attention.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/reduce.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/softmax.hpp"

namespace tapegrad::nn {

namespace {
// [rows, cols], true where col > row: query i sees keys 0..i (top-left aligned when rows != cols).
BoolArray upper_triangle(std::size_t rows, std::size_t cols) {
  BoolArray m = BoolArray::from_shape({rows, cols});
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) m(i, j) = j > i;
  return m;
}

template <typename T>
Tensor<T> xavier_uniform(std::size_t fan_out, std::size_t fan_in, Generator& gen) {
  const T bound = T(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
  return Tensor<T>::uniform({fan_out, fan_in}, -bound, bound, gen);
}

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }
}  // namespace

BoolArray causal_mask(std::size_t sz) { return upper_triangle(sz, sz); }

template <typename T>
Tensor<T> generate_square_subsequent_mask(std::size_t sz) {
  xt::xarray<T> m = xt::zeros<T>({sz, sz});
  for (std::size_t i = 0; i < sz; ++i)
    for (std::size_t j = i + 1; j < sz; ++j) m(i, j) = -std::numeric_limits<T>::infinity();
  return Tensor<T>(std::move(m));
}

template <typename T>
MultiheadAttention<T>::MultiheadAttention(const MultiheadAttentionOptions& o, Generator& gen,
                                          std::shared_ptr<Generator> dropout_gen)
    : embed_dim(o.embed_dim),
      num_heads(o.num_heads),
      head_dim(0),
      kdim(o.kdim ? o.kdim : o.embed_dim),
      vdim(o.vdim ? o.vdim : o.embed_dim),
      dropout(o.dropout),
      batch_first(o.batch_first),
      dropout_gen_(std::move(dropout_gen)) {
  if (num_heads == 0 || embed_dim % num_heads != 0) {
    throw ShapeError(
        fmt::format("MultiheadAttention: embed_dim {} must be divisible by num_heads {}", embed_dim, num_heads));
  }
  if (!(dropout >= 0.0 && dropout < 1.0))
    throw std::invalid_argument(fmt::format("MultiheadAttention: dropout must lie in [0, 1), got {}", dropout));
  head_dim = embed_dim / num_heads;
  const std::size_t e = embed_dim;
  // torch builds out_proj (drawing its init) before initializing the input projections.
  auto out = std::make_shared<Linear<T>>(e, e, gen, o.bias);
  out->type_name_ = "NonDynamicallyQuantizableLinear";
  if (kdim == e && vdim == e) {
    in_proj_weight = this->register_parameter("in_proj_weight", xavier_uniform<T>(3 * e, e, gen));
  } else {
    q_proj_weight = this->register_parameter("q_proj_weight", xavier_uniform<T>(e, e, gen));
    k_proj_weight = this->register_parameter("k_proj_weight", xavier_uniform<T>(e, kdim, gen));
    v_proj_weight = this->register_parameter("v_proj_weight", xavier_uniform<T>(e, vdim, gen));
  }
  if (o.bias) {
    in_proj_bias = this->register_parameter("in_proj_bias", Tensor<T>::zeros({3 * e}));
    std::fill(out->bias.mutable_data().begin(), out->bias.mutable_data().end(), T(0));
  }
  out_proj = this->register_module("out_proj", out);
  if (!dropout_gen_) dropout_gen_ = std::make_shared<Generator>(gen.next_u64());
  this->register_generator("dropout_generator", dropout_gen_);
}

template <typename T>
std::pair<Tensor<T>, Tensor<T>> MultiheadAttention<T>::forward(const Tensor<T>& query, const Tensor<T>& key,
                                                               const Tensor<T>& value,
                                                               const AttentionMask<T>& key_padding_mask,
                                                               bool need_weights, const AttentionMask<T>& attn_mask,
                                                               bool average_attn_weights, bool is_causal) const {
  const char* op = "MultiheadAttention";
  if (query.dim() == 2) {
    // Unbatched, as torch: a batch of one at the batch dim, key_padding_mask [S], attn_mask [L, S]
    // or [num_heads, L, S]; the batch dim is removed from the results again.
    if (key.dim() != 2 || value.dim() != 2) {
      throw ShapeError(fmt::format("{}: an unbatched query {} needs unbatched key and value, got {} and {}", op,
                                   format_shape(query.shape()), format_shape(key.shape()),
                                   format_shape(value.shape())));
    }
    const std::int64_t bdim = batch_first ? 0 : 1;
    const Tensor<T> q = unsqueeze(query, bdim);
    const Tensor<T> k = key.same_as(query) ? q : unsqueeze(key, bdim);
    const Tensor<T> v = value.same_as(key) ? k : unsqueeze(value, bdim);
    AttentionMask<T> kpm = key_padding_mask;
    if (kpm.defined() && kpm.shape().size() == 1) {
      const std::size_t s = kpm.shape()[0];
      if (kpm.is_bool()) {
        BoolArray m = kpm.bool_mask();
        m.reshape({1, s});
        kpm = m;
      } else {
        kpm = reshape(kpm.float_mask(), {1, i64(s)});
      }
    }
    auto [out, weights] = forward(q, k, v, kpm, need_weights, attn_mask, average_attn_weights, is_causal);
    return {squeeze(out, bdim), weights.defined() ? squeeze(weights, 0) : weights};
  }
  const Shape &sq = query.shape(), &sk = key.shape(), &sv = value.shape();
  const char* layout = batch_first ? "[B, L, E]" : "[L, B, E]";
  if (sq.size() != 3 || sq[2] != embed_dim) {
    throw ShapeError(fmt::format("{}: query must be {} with E = {}, got {}", op, layout, embed_dim, format_shape(sq)));
  }
  if (sk.size() != 3 || sk[2] != kdim) {
    throw ShapeError(fmt::format("{}: key must be {} with kdim = {}, got {}", op,
                                 batch_first ? "[B, S, kdim]" : "[S, B, kdim]", kdim, format_shape(sk)));
  }
  if (sv.size() != 3 || sv[2] != vdim) {
    throw ShapeError(fmt::format("{}: value must be {} with vdim = {}, got {}", op,
                                 batch_first ? "[B, S, vdim]" : "[S, B, vdim]", vdim, format_shape(sv)));
  }
  const std::size_t bdim = batch_first ? 0 : 1, sdim = batch_first ? 1 : 0;
  const std::size_t B = sq[bdim], L = sq[sdim], S = sk[sdim], H = num_heads, E = embed_dim, D = head_dim;
  if (sk[bdim] != B || sv[bdim] != B || sv[sdim] != S) {
    throw ShapeError(fmt::format("{}: query {}, key {} and value {} disagree on batch or source length", op,
                                 format_shape(sq), format_shape(sk), format_shape(sv)));
  }
  if (key_padding_mask.defined() && key_padding_mask.shape() != Shape{B, S}) {
    throw ShapeError(fmt::format("{}: key_padding_mask must be [B, S] = [{}, {}], got {}", op, B, S,
                                 format_shape(key_padding_mask.shape())));
  }
  if (attn_mask.defined() && attn_mask.shape() != Shape{L, S} && attn_mask.shape() != Shape{B * H, L, S}) {
    throw ShapeError(
        fmt::format("{}: attn_mask must be [L, S] = [{}, {}] or [B * num_heads, L, S] = [{}, {}, {}], got {}", op, L, S,
                    B * H, L, S, format_shape(attn_mask.shape())));
  }

  // Work batch-major: [B, L, E].
  const auto batch_major = [&](const Tensor<T>& x) { return batch_first ? x : transpose(x, 0, 1); };
  const bool packed = in_proj_weight.defined() && query.same_as(key) && key.same_as(value);
  const auto finish = [&](Tensor<T> heads) {  // [B, L, E] with heads side by side
    Tensor<T> out = out_proj->forward(heads);
    return batch_first ? out : transpose(out, 0, 1);
  };
  std::vector<Tensor<T>> biases(3);
  if (in_proj_bias.defined()) biases = chunk(in_proj_bias, 3, 0);
  const auto separate_projections = [&]() -> std::vector<Tensor<T>> {
    std::vector<Tensor<T>> w;
    if (in_proj_weight.defined())
      w = chunk(in_proj_weight, 3, 0);
    else
      w = {q_proj_weight, k_proj_weight, v_proj_weight};
    const Tensor<T> kb = batch_major(key);
    return {linear(batch_major(query), w[0], biases[0]), linear(kb, w[1], biases[1]),
            linear(key.same_as(value) ? kb : batch_major(value), w[2], biases[2])};
  };

  // Bool masks (or none) and no weights asked for: the fused kernel (autograd/fused_attention.hpp),
  // with the composed path's semantics, dropout draws included, and no head split/merge copies.
  const bool float_masks =
      (attn_mask.defined() && !attn_mask.is_bool()) || (key_padding_mask.defined() && !key_padding_mask.is_bool());
  if (!need_weights && !float_masks) {
    AttentionBoolMasks m;
    if (key_padding_mask.defined()) m.key_padding_mask = &key_padding_mask.bool_mask();
    if (attn_mask.defined()) m.attn_mask = &attn_mask.bool_mask();
    m.is_causal = is_causal && !attn_mask.defined();
    const bool train = this->is_training();
    if (packed)
      return {finish(fused_self_attention(linear(batch_major(query), in_proj_weight, in_proj_bias), H, m, dropout,
                                          train, *dropout_gen_)),
              Tensor<T>()};
    const auto qkv = separate_projections();
    return {finish(fused_attention(qkv[0], qkv[1], qkv[2], H, m, dropout, train, *dropout_gen_)), Tensor<T>()};
  }

  Tensor<T> q, k, v;
  if (packed) {
    // Self-attention: one GEMM for the packed projection, then split into q, k, v.
    auto qkv = chunk(linear(batch_major(query), in_proj_weight, in_proj_bias), 3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    const auto qkv = separate_projections();
    q = qkv[0], k = qkv[1], v = qkv[2];
  }
  // Heads: [B, L, E] -> [B, H, L, D]; keys go straight to [B, H, D, S] for the product.
  q = permute(reshape(q, {i64(B), i64(L), i64(H), i64(D)}), {0, 2, 1, 3});
  const Tensor<T> kt = permute(reshape(k, {i64(B), i64(S), i64(H), i64(D)}), {0, 2, 3, 1});
  v = permute(reshape(v, {i64(B), i64(S), i64(H), i64(D)}), {0, 2, 1, 3});
  Tensor<T> scores = matmul(q / std::sqrt(static_cast<double>(D)), kt);  // [B, H, L, S]

  // Float masks are added; bool masks (and is_causal) are merged into one [B, H, L, S] block list.
  if (attn_mask.defined() && !attn_mask.is_bool()) {
    const Tensor<T>& m = attn_mask.float_mask();
    scores = scores + (m.dim() == 2 ? m : reshape(m, {i64(B), i64(H), i64(L), i64(S)}));
  }
  if (key_padding_mask.defined() && !key_padding_mask.is_bool())
    scores = scores + reshape(key_padding_mask.float_mask(), {i64(B), 1, 1, i64(S)});
  const bool causal = is_causal && !attn_mask.defined();
  const bool bool_attn = attn_mask.defined() && attn_mask.is_bool();
  const bool bool_kpm = key_padding_mask.defined() && key_padding_mask.is_bool();
  if (causal || bool_attn || bool_kpm) {
    BoolArray blocked = BoolArray::from_shape({B, H, L, S});
    const bool* am = bool_attn ? attn_mask.bool_mask().data() : nullptr;
    const bool per_head = bool_attn && attn_mask.shape().size() == 3;
    const bool* kpm = bool_kpm ? key_padding_mask.bool_mask().data() : nullptr;
    bool* out = blocked.data();
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < L; ++i)
          for (std::size_t j = 0; j < S; ++j) {
            bool m = causal && j > i;
            if (am) m = m || am[(per_head ? (b * H + h) * L * S : 0) + i * S + j];
            if (kpm) m = m || kpm[b * S + j];
            *out++ = m;
          }
    scores = masked_fill(scores, blocked, -std::numeric_limits<T>::infinity());
  }

  // A row with no visible key would be all NaN after softmax; it attends to nothing instead.
  BoolArray dead = BoolArray::from_shape({B, H, L, 1});
  bool any_dead = false;
  {
    const T* p = scores.data().data();
    for (std::size_t r = 0; r < B * H * L; ++r) {
      bool all = S > 0;
      for (std::size_t j = 0; j < S && all; ++j) all = p[r * S + j] == -std::numeric_limits<T>::infinity();
      dead.data()[r] = all;
      any_dead = any_dead || all;
    }
  }
  if (any_dead) scores = masked_fill(scores, dead, T(0));
  Tensor<T> weights = softmax(scores, -1);
  if (any_dead) weights = masked_fill(weights, dead, T(0));
  if (this->is_training() && dropout > 0.0) weights = tapegrad::dropout(weights, dropout, true, *dropout_gen_);

  Tensor<T> out = matmul(weights, v);  // [B, H, L, D]
  out = finish(reshape(permute(out, {0, 2, 1, 3}), {i64(B), i64(L), i64(E)}));

  Tensor<T> returned;
  if (need_weights) returned = average_attn_weights ? mean(weights, {1}) : weights;
  return {out, returned};
}

template Tensor<float> generate_square_subsequent_mask<float>(std::size_t);
template Tensor<double> generate_square_subsequent_mask<double>(std::size_t);
template class MultiheadAttention<float>;
template class MultiheadAttention<double>;

}  // namespace tapegrad::nn
