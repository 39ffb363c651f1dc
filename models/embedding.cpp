#include "tapegrad/models/embedding.hpp"

#include <algorithm>
#include <cmath>

#include "tapegrad/autograd/elementwise.hpp"

namespace tapegrad::models {

std::string positional_name(PositionalKind p) { return p == PositionalKind::Sinusoidal ? "sinusoidal" : "learned"; }

template <typename T>
std::shared_ptr<nn::Embedding<T>> scaled_normal_embedding(std::size_t vocab_size, std::size_t d_model,
                                                          std::optional<std::int64_t> padding_idx, Generator& gen) {
  auto e = std::make_shared<nn::Embedding<T>>(vocab_size, d_model, gen, padding_idx);
  Generator init(gen.next_u64());
  auto& w = e->weight.mutable_data();
  const double stddev = 1.0 / std::sqrt(static_cast<double>(d_model));
  for (auto& v : w) v = static_cast<T>(stddev * init.normal());
  if (e->padding_idx) {
    auto row = w.data() + static_cast<std::size_t>(*e->padding_idx) * d_model;
    std::fill(row, row + d_model, T(0));
  }
  return e;
}

template <typename T>
void register_positions(nn::Module<T>& owner, PositionalKind kind, std::size_t max_len, std::size_t d_model,
                        Generator& gen, std::shared_ptr<nn::SinusoidalPositionalEncoding<T>>& sinusoidal,
                        std::shared_ptr<nn::LearnedPositionalEmbedding<T>>& learned) {
  if (kind == PositionalKind::Sinusoidal) {
    sinusoidal = owner.register_module(
        "pos_encoding", std::make_shared<nn::SinusoidalPositionalEncoding<T>>(d_model, max_len, /*batch_first=*/true));
  } else {
    learned = owner.register_module("pos_encoding", std::make_shared<nn::LearnedPositionalEmbedding<T>>(
                                                        max_len, d_model, gen, /*batch_first=*/true));
  }
}

template <typename T>
Tensor<T> scaled_lookup(const nn::Embedding<T>& table, const xt::xarray<std::int64_t>& ids) {
  return mul(table.forward(ids), static_cast<T>(std::sqrt(static_cast<double>(table.embedding_dim))));
}

template std::shared_ptr<nn::Embedding<float>> scaled_normal_embedding<float>(std::size_t, std::size_t,
                                                                              std::optional<std::int64_t>, Generator&);
template std::shared_ptr<nn::Embedding<double>> scaled_normal_embedding<double>(std::size_t, std::size_t,
                                                                                std::optional<std::int64_t>,
                                                                                Generator&);
template void register_positions<float>(nn::Module<float>&, PositionalKind, std::size_t, std::size_t, Generator&,
                                        std::shared_ptr<nn::SinusoidalPositionalEncoding<float>>&,
                                        std::shared_ptr<nn::LearnedPositionalEmbedding<float>>&);
template void register_positions<double>(nn::Module<double>&, PositionalKind, std::size_t, std::size_t, Generator&,
                                         std::shared_ptr<nn::SinusoidalPositionalEncoding<double>>&,
                                         std::shared_ptr<nn::LearnedPositionalEmbedding<double>>&);
template Tensor<float> scaled_lookup<float>(const nn::Embedding<float>&, const xt::xarray<std::int64_t>&);
template Tensor<double> scaled_lookup<double>(const nn::Embedding<double>&, const xt::xarray<std::int64_t>&);

}  // namespace tapegrad::models
