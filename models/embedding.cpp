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
Tensor<T> scaled_lookup(const nn::Embedding<T>& table, const xt::xarray<std::int64_t>& ids) {
  return mul(table.forward(ids), static_cast<T>(std::sqrt(static_cast<double>(table.embedding_dim))));
}

template std::shared_ptr<nn::Embedding<float>> scaled_normal_embedding<float>(std::size_t, std::size_t,
                                                                              std::optional<std::int64_t>, Generator&);
template std::shared_ptr<nn::Embedding<double>> scaled_normal_embedding<double>(std::size_t, std::size_t,
                                                                                std::optional<std::int64_t>,
                                                                                Generator&);
template Tensor<float> scaled_lookup<float>(const nn::Embedding<float>&, const xt::xarray<std::int64_t>&);
template Tensor<double> scaled_lookup<double>(const nn::Embedding<double>&, const xt::xarray<std::int64_t>&);

}  // namespace tapegrad::models
