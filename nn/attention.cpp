#include "tapegrad/nn/attention.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "tapegrad/autograd/attention.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/reduce.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/nn/init.hpp"
#include "tapegrad/nn/lora.hpp"

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
  Tensor<T> w = Tensor<T>::zeros({fan_out, fan_in});
  return init::xavier_uniform_(w, gen);
}

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

// An unbatched key_padding_mask [S] as a batch of one, [1, S].
template <typename T>
AttentionMask<T> batch_of_one(const AttentionMask<T>& key_padding_mask) {
  if (!key_padding_mask.defined() || key_padding_mask.shape().size() != 1) return key_padding_mask;
  const std::size_t s = key_padding_mask.shape()[0];
  if (!key_padding_mask.is_bool()) return reshape(key_padding_mask.float_mask(), {1, i64(s)});
  BoolArray m = key_padding_mask.bool_mask();
  m.reshape({1, s});
  return m;
}

// The masks as the attention kernels take them (autograd/attention.hpp).
template <typename T>
AttentionMasks<T> kernel_masks(const AttentionMask<T>& key_padding_mask, const AttentionMask<T>& attn_mask) {
  AttentionMasks<T> masks;
  if (attn_mask.defined()) {
    if (attn_mask.is_bool())
      masks.attn_mask = std::make_shared<const BoolArray>(attn_mask.bool_mask());
    else
      masks.attn_bias = attn_mask.float_mask().saved();
  }
  if (key_padding_mask.defined()) {
    if (key_padding_mask.is_bool())
      masks.key_padding_mask = std::make_shared<const BoolArray>(key_padding_mask.bool_mask());
    else
      masks.key_padding_bias = key_padding_mask.float_mask().saved();
  }
  return masks;
}

}  // namespace

// The shapes of a batched forward's inputs and masks, checked; throws ShapeError naming them.
template <typename T>
void MultiheadAttention<T>::check_inputs(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                         const AttentionMask<T>& key_padding_mask,
                                         const AttentionMask<T>& attn_mask) const {
  const char* op = "MultiheadAttention";
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
  const std::size_t B = sq[bdim], L = sq[sdim], S = sk[sdim], H = num_heads;
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
  for (const AttentionMask<T>* m : {&key_padding_mask, &attn_mask})
    if (m->defined() && !m->is_bool() && m->float_mask().requires_grad())
      throw std::invalid_argument(fmt::format("{}: float masks are constants, but a mask of shape {} requires grad", op,
                                              format_shape(m->shape())));
}

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
  if (!(dropout >= 0.0 && dropout <= 1.0))
    throw std::invalid_argument(fmt::format("MultiheadAttention: dropout must lie in [0, 1], got {}", dropout));
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
Tensor<T> MultiheadAttention<T>::in_projection(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias,
                                               std::size_t begin, std::size_t end) const {
  if (!lora || lora->merged) return linear(x, weight, bias);
  return linear(x, weight, bias) + lora->forward(x, begin, end);
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
    auto [out, weights] =
        forward(q, k, v, batch_of_one(key_padding_mask), need_weights, attn_mask, average_attn_weights, is_causal);
    return {squeeze(out, bdim), weights.defined() ? squeeze(weights, 0) : weights};
  }
  check_inputs(query, key, value, key_padding_mask, attn_mask);
  const std::size_t H = num_heads;

  // Work batch-major: [B, L, E], heads side by side; scaled_dot_product_attention's kernel reads the
  // heads in place (autograd/attention.hpp), so no head split or merge copies.
  const auto batch_major = [&](const Tensor<T>& x) { return batch_first ? x : transpose(x, 0, 1); };
  const AttentionMasks<T> masks = kernel_masks(key_padding_mask, attn_mask);
  const bool causal = is_causal && !attn_mask.defined();
  const double p = this->is_training() ? dropout : 0.0;
  std::pair<Tensor<T>, Tensor<T>> attended;
  if (in_proj_weight.defined() && query.same_as(key) && key.same_as(value)) {
    // Self-attention: one GEMM for the packed projection, read in place as q, k and v.
    attended =
        multi_head_self_attention(in_projection(batch_major(query), in_proj_weight, in_proj_bias, 0, 3 * embed_dim), H,
                                  masks, p, causal, std::nullopt, need_weights, dropout_gen_.get());
  } else if (in_proj_weight.defined() && key.same_as(value)) {
    // Encoder-decoder attention: q, then k and v in one GEMM of key (torch's _in_projection_packed), so
    // that key takes one gradient per call, summed in the same order whether or not the call runs
    // under activation checkpointing, which hands its inputs' gradients on whole.
    const std::int64_t e = static_cast<std::int64_t>(embed_dim);
    const std::vector<Tensor<T>> w = split(in_proj_weight, std::vector<std::int64_t>{e, 2 * e}, 0);
    std::vector<Tensor<T>> biases(2);
    if (in_proj_bias.defined()) biases = split(in_proj_bias, std::vector<std::int64_t>{e, 2 * e}, 0);
    const std::size_t E = embed_dim;
    const Tensor<T> q = in_projection(batch_major(query), w[0], biases[0], 0, E);
    const std::vector<Tensor<T>> kv = split(in_projection(batch_major(key), w[1], biases[1], E, 3 * E), e, -1);
    attended =
        multi_head_attention(q, kv[0], kv[1], H, masks, p, causal, std::nullopt, need_weights, dropout_gen_.get());
  } else {
    std::vector<Tensor<T>> w;
    if (in_proj_weight.defined())
      w = chunk(in_proj_weight, 3, 0);
    else
      w = {q_proj_weight, k_proj_weight, v_proj_weight};
    std::vector<Tensor<T>> biases(3);
    if (in_proj_bias.defined()) biases = chunk(in_proj_bias, 3, 0);
    // Only the packed weight has an adapter (inject_lora refuses separate q/k/v_proj_weight).
    const std::size_t E = embed_dim;
    const Tensor<T> kb = batch_major(key);
    const Tensor<T> q = in_projection(batch_major(query), w[0], biases[0], 0, E);
    const Tensor<T> k = in_projection(kb, w[1], biases[1], E, 2 * E);
    const Tensor<T> v = in_projection(key.same_as(value) ? kb : batch_major(value), w[2], biases[2], 2 * E, 3 * E);
    attended = multi_head_attention(q, k, v, H, masks, p, causal, std::nullopt, need_weights, dropout_gen_.get());
  }
  Tensor<T> out = out_proj->forward(attended.first);
  if (!batch_first) out = transpose(out, 0, 1);
  Tensor<T> returned;
  if (need_weights) returned = average_attn_weights ? mean(attended.second, {1}) : attended.second;
  return {out, returned};
}

template <typename T>
Tensor<T> cached_causal_attention(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                  std::size_t num_heads, KVCache<T>& cache) {
  const std::size_t n = query.size(1), past = cache.length();
  cache.key = past ? cat<T>({cache.key, key}, 1) : key;
  cache.value = past ? cat<T>({cache.value, value}, 1) : value;
  // Query i is position past + i. With an empty cache that is the usual top-left causal mask; a single
  // new query sees every key; only several queries after a prefix need the shifted mask [n, past + n].
  AttentionMasks<T> masks;
  if (past > 0 && n > 1) {
    auto shifted = std::make_shared<BoolArray>(BoolArray::from_shape({n, past + n}));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < past + n; ++j) (*shifted)(i, j) = j > past + i;
    masks.attn_mask = shifted;
  }
  return multi_head_attention(query, cache.key, cache.value, num_heads, masks, 0.0, /*is_causal=*/past == 0).first;
}

template <typename T>
Tensor<T> MultiheadAttention<T>::forward_incremental(const Tensor<T>& x, KVCache<T>& cache) const {
  const char* op = "MultiheadAttention.forward_incremental";
  if (!in_proj_weight.defined()) {
    throw ShapeError(fmt::format("{}: needs the packed in_proj_weight (kdim {} and vdim {} differ from embed_dim {})",
                                 op, kdim, vdim, embed_dim));
  }
  if (x.dim() != 3 || x.size(2) != embed_dim) {
    throw ShapeError(fmt::format("{}: x must be {} with E = {}, got {}", op, batch_first ? "[B, n, E]" : "[n, B, E]",
                                 embed_dim, format_shape(x.shape())));
  }
  const Tensor<T> xb = batch_first ? x : transpose(x, 0, 1);
  const std::size_t B = xb.size(0), past = cache.length();
  if (past > 0 && cache.key.size(0) != B) {
    throw ShapeError(fmt::format("{}: x has batch {} but the cache holds batch {}", op, B, cache.key.size(0)));
  }
  const auto qkv = chunk(in_projection(xb, in_proj_weight, in_proj_bias, 0, 3 * embed_dim), 3, -1);
  const Tensor<T> out = out_proj->forward(cached_causal_attention(qkv[0], qkv[1], qkv[2], num_heads, cache));
  return batch_first ? out : transpose(out, 0, 1);
}

template Tensor<float> cached_causal_attention<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&,
                                                      std::size_t, KVCache<float>&);
template Tensor<double> cached_causal_attention<double>(const Tensor<double>&, const Tensor<double>&,
                                                        const Tensor<double>&, std::size_t, KVCache<double>&);
template Tensor<float> generate_square_subsequent_mask<float>(std::size_t);
template Tensor<double> generate_square_subsequent_mask<double>(std::size_t);
template class MultiheadAttention<float>;
template class MultiheadAttention<double>;

}  // namespace tapegrad::nn
