/// @file
/// The input layer the token models share (classifier, encoder-decoder, language models): token
/// embeddings drawn from N(0, d_model^-0.5) and multiplied by sqrt(d_model), plus positions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/positional_encoding.hpp"

namespace tapegrad::models {

/// Which positional encoding a token model adds: the fixed sinusoids or a learned table.
enum class PositionalKind { Sinusoidal, Learned };
/// "sinusoidal" or "learned".
std::string positional_name(PositionalKind p);

/// nn::Embedding(vocab_size, d_model, gen, padding_idx) whose weights are then redrawn from
/// N(0, d_model^-0.5) by a Generator seeded with gen.next_u64(), the padding row (if any) zero. Used with
/// scaled_lookup, rows start at unit scale like the positional encoding, while Adam moves them at a rate
/// relative to that scale ("Attention Is All You Need", section 3.4; torch's N(0, 1) times sqrt(d_model)
/// starts 8x larger at d_model 64 and learns correspondingly slower), and a tied output projection
/// starts with logits of order one.
template <typename T>
std::shared_ptr<nn::Embedding<T>> scaled_normal_embedding(std::size_t vocab_size, std::size_t d_model,
                                                          std::optional<std::int64_t> padding_idx, Generator& gen);

/// Registers a token model's positions on owner as "pos_encoding", batch-first over max_len positions:
/// the fixed sinusoids into `sinusoidal`, or a table drawn from gen into `learned`; the other stays null.
template <typename T>
void register_positions(nn::Module<T>& owner, PositionalKind kind, std::size_t max_len, std::size_t d_model,
                        Generator& gen, std::shared_ptr<nn::SinusoidalPositionalEncoding<T>>& sinusoidal,
                        std::shared_ptr<nn::LearnedPositionalEmbedding<T>>& learned);

/// table.forward(ids) * sqrt(embedding_dim).
template <typename T>
Tensor<T> scaled_lookup(const nn::Embedding<T>& table, const xt::xarray<std::int64_t>& ids);

}  // namespace tapegrad::models
