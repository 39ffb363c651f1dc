/// @file
/// The input layer the token models share (classifier, encoder-decoder, language models): token
/// embeddings drawn from N(0, d_model^-0.5) and multiplied by sqrt(d_model), plus positions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/dropout.hpp"
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

/// The input layer of TransformerClassifier and of the models whose weights start one (GPT,
/// TransformerMaskedLM): "embedding" (scaled_normal_embedding), "pos_encoding" (register_positions) and
/// "dropout", registered on the model in that order. One definition keeps their names and draws the same.
template <typename T>
struct TokenInput {
  std::shared_ptr<nn::Embedding<T>> embedding;
  std::shared_ptr<nn::SinusoidalPositionalEncoding<T>> sinusoidal;  ///< one of these two is set
  std::shared_ptr<nn::LearnedPositionalEmbedding<T>> learned;
  std::shared_ptr<nn::Dropout<T>> dropout;

  /// Registers "embedding" on owner from o's vocab_size, d_model and padding_idx.
  template <typename Options>
  void register_embedding(nn::Module<T>& owner, const Options& o, Generator& gen) {
    embedding =
        owner.register_module("embedding", scaled_normal_embedding<T>(o.vocab_size, o.d_model, o.padding_idx, gen));
  }
  /// Then (after what a model adds to its tokens, such as the classifier's n-grams) "pos_encoding" from o's
  /// positional, max_len and d_model, and "dropout" with probability p, drawing from dropout_gen.
  template <typename Options>
  void register_positions_and_dropout(nn::Module<T>& owner, const Options& o, double p, Generator& gen,
                                      std::shared_ptr<Generator> dropout_gen) {
    register_positions<T>(owner, o.positional, o.max_len, o.d_model, gen, sinusoidal, learned);
    dropout = owner.register_module("dropout", std::make_shared<nn::Dropout<T>>(p, std::move(dropout_gen)));
  }

  /// tokens [B, L, d_model] (looked up, scaled or not) -> dropout(tokens + the positions offset .. offset + L - 1).
  Tensor<T> add_positions(const Tensor<T>& tokens, std::size_t offset = 0) const {
    return dropout->forward(sinusoidal ? sinusoidal->forward(tokens, offset) : learned->forward(tokens, offset));
  }
};

}  // namespace tapegrad::models
