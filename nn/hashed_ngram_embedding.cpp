#include "tapegrad/nn/hashed_ngram_embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/embedding.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::nn {

std::uint64_t ngram_hash(const std::int64_t* tokens, std::size_t n) {
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](std::uint8_t byte) {
    h ^= byte;
    h *= 1099511628211ULL;
  };
  mix(static_cast<std::uint8_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::uint64_t>(tokens[i]);
    for (int byte = 0; byte < 8; ++byte) mix(static_cast<std::uint8_t>(v >> (8 * byte)));
  }
  return h;
}

xt::xarray<std::int64_t> ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       std::size_t num_buckets, std::size_t max_n) {
  if (num_buckets < 2) throw std::invalid_argument(fmt::format("ngram_buckets: num_buckets {} < 2", num_buckets));
  if (max_n < 2) throw std::invalid_argument(fmt::format("ngram_buckets: max_n {} < 2", max_n));
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(fmt::format("ngram_buckets: ids {} and padding_mask {} must both be [batch, length]",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1), orders = max_n - 1;
  xt::xarray<std::int64_t> out = xt::zeros<std::int64_t>({batch, length, orders});
  const std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  std::int64_t* o = out.data();
  for (std::size_t b = 0; b < batch; ++b) {
    std::size_t run = 0;  // real tokens ending at t, counted back to the last padding
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      run = pad[at] ? 0 : run + 1;
      for (std::size_t n = 2; n <= max_n && n <= run; ++n) {
        o[at * orders + (n - 2)] = ngram_bucket(id + at + 1 - n, n, num_buckets);
      }
    }
  }
  return out;
}

xt::xarray<std::int64_t> document_ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                                std::size_t num_buckets, std::size_t max_n) {
  if (num_buckets < 2) {
    throw std::invalid_argument(fmt::format("document_ngram_buckets: num_buckets {} < 2", num_buckets));
  }
  if (max_n < 1) throw std::invalid_argument("document_ngram_buckets: max_n 0 < 1");
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(
        fmt::format("document_ngram_buckets: ids {} and padding_mask {} must both be [batch, length]",
                    format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1);
  const std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  std::vector<std::vector<std::int64_t>> rows(batch);
  std::size_t widest = 0;
  for (std::size_t b = 0; b < batch; ++b) {
    auto& row = rows[b];
    std::size_t run = 0;  // real tokens ending at t, counted back to the last padding
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      run = pad[at] ? 0 : run + 1;
      for (std::size_t n = 1; n <= max_n && n <= run; ++n) {
        row.push_back(ngram_bucket(id + at + 1 - n, n, num_buckets));
      }
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    widest = std::max(widest, row.size());
  }
  xt::xarray<std::int64_t> out = xt::zeros<std::int64_t>({batch, widest});
  for (std::size_t b = 0; b < batch; ++b) std::copy(rows[b].begin(), rows[b].end(), out.data() + b * widest);
  return out;
}

xt::xarray<std::int64_t> negated_word_buckets(const xt::xarray<std::int64_t>& marked, const BoolArray& padding_mask,
                                              std::size_t num_buckets) {
  if (marked.dimension() != 2 || shape_of(marked) != shape_of(padding_mask)) {
    throw std::invalid_argument(
        fmt::format("negated_word_buckets: marked {} and padding_mask {} must both be [batch, length]",
                    format_shape(shape_of(marked)), format_shape(shape_of(padding_mask))));
  }
  // The plain ids of the marked tokens, every other position hidden as padding.
  xt::xarray<std::int64_t> plain = xt::zeros<std::int64_t>(marked.shape());
  BoolArray hidden = BoolArray::from_shape(marked.shape());
  for (std::size_t i = 0; i < marked.size(); ++i) {
    const bool negated = !padding_mask.data()[i] && marked.data()[i] < 0;
    hidden.data()[i] = !negated;
    if (negated) plain.data()[i] = ~marked.data()[i];
  }
  return document_ngram_buckets(plain, hidden, num_buckets, 1);
}

template <typename T>
HashedNgramEmbedding<T>::HashedNgramEmbedding(std::size_t num_buckets_, std::size_t embedding_dim_, std::size_t max_n_,
                                              Generator& gen, double init_std)
    : num_buckets(num_buckets_), embedding_dim(embedding_dim_), max_n(max_n_) {
  if (num_buckets < 2 || embedding_dim == 0 || max_n < 2) {
    throw std::invalid_argument(
        fmt::format("HashedNgramEmbedding: num_buckets {} must be at least 2, embedding_dim {} positive and max_n {} "
                    "at least 2",
                    num_buckets, embedding_dim, max_n));
  }
  auto w = Tensor<T>::normal({num_buckets, embedding_dim}, T(0), static_cast<T>(init_std), gen);
  std::fill(w.mutable_data().data(), w.mutable_data().data() + embedding_dim, T(0));
  weight = this->register_parameter("weight", w);
}

template <typename T>
Tensor<T> HashedNgramEmbedding<T>::forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const {
  // Each position is a bag of its n-grams' buckets; bucket 0 ("no n-gram") adds nothing.
  return embedding_bag_sum(weight, ngram_buckets(ids, padding_mask, num_buckets, max_n), std::int64_t{0});
}

template <typename T>
std::string HashedNgramEmbedding<T>::extra_repr() const {
  return fmt::format("{}, {}, max_n={}", num_buckets, embedding_dim, max_n);
}

template class HashedNgramEmbedding<float>;
template class HashedNgramEmbedding<double>;

template <typename T>
HashedNgramBag<T>::HashedNgramBag(std::size_t num_buckets_, std::size_t out_features_, std::size_t max_n_,
                                  bool feature_scale, std::optional<double> initial_negation_factor)
    : num_buckets(num_buckets_), out_features(out_features_), max_n(max_n_) {
  if (num_buckets < 2 || out_features == 0 || max_n < 1) {
    throw std::invalid_argument(
        fmt::format("HashedNgramBag: num_buckets {} must be at least 2, out_features {} positive and max_n {} at "
                    "least 1",
                    num_buckets, out_features, max_n));
  }
  weight = this->register_parameter("weight", Tensor<T>::zeros({num_buckets, out_features}));
  if (feature_scale) scale = this->register_buffer("scale", Tensor<T>::ones({num_buckets, std::size_t{1}}));
  if (initial_negation_factor) {
    if (!std::isfinite(*initial_negation_factor)) {
      throw std::invalid_argument(
          fmt::format("HashedNgramBag: the initial negation factor {} is not finite", *initial_negation_factor));
    }
    negation_factor =
        this->register_parameter("negation_factor", Tensor<T>::full({1}, static_cast<T>(*initial_negation_factor)));
  }
}

template <typename T>
Tensor<T> HashedNgramBag<T>::forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const {
  // Each n-gram of a bag weighted by its bucket's scale (torch's per_sample_weights): the batch's few
  // thousand n-grams, where scaling the table itself (weight * scale) would touch all of its rows
  // forward and backward.
  const auto bag_sum = [this](const xt::xarray<std::int64_t>& buckets) {
    if (!scale.defined()) return embedding_bag_sum(weight, buckets, std::int64_t{0});
    xt::xarray<T> per_sample = xt::xarray<T>::from_shape(buckets.shape());
    const T* s = scale.data().data();
    for (std::size_t i = 0; i < buckets.size(); ++i) per_sample.data()[i] = s[buckets.data()[i]];
    return embedding_bag_sum(weight, buckets, std::int64_t{0}, Tensor<T>(std::move(per_sample)));
  };
  if (negation.empty()) return bag_sum(document_ngram_buckets(ids, padding_mask, num_buckets, max_n));
  const auto marked = negation.mark(ids, padding_mask);
  auto out = bag_sum(document_ngram_buckets(marked, padding_mask, num_buckets, max_n));
  if (!negation_factor.defined()) return out;
  return add(out, mul(bag_sum(negated_word_buckets(marked, padding_mask, num_buckets)), negation_factor));
}

template <typename T>
void HashedNgramBag<T>::set_feature_scale(const xt::xarray<double>& per_bucket) {
  if (!scale.defined()) throw std::invalid_argument("HashedNgramBag: built without feature_scale, it has no scale");
  if (per_bucket.dimension() != 1 || per_bucket.size() != num_buckets) {
    throw std::invalid_argument(fmt::format("HashedNgramBag: the feature scale {} must be [{}]",
                                            format_shape(shape_of(per_bucket)), num_buckets));
  }
  auto& s = scale.mutable_data();
  for (std::size_t b = 0; b < num_buckets; ++b) {
    if (!std::isfinite(per_bucket(b))) {
      throw std::invalid_argument(
          fmt::format("HashedNgramBag: the feature scale of bucket {} is {}", b, per_bucket(b)));
    }
    s(b, 0) = static_cast<T>(per_bucket(b));
  }
}

template <typename T>
std::string HashedNgramBag<T>::extra_repr() const {
  return fmt::format("{}, {}, max_n={}{}{}{}", num_buckets, out_features, max_n,
                     scale.defined() ? ", feature_scale" : "", negation.empty() ? "" : ", negation",
                     negation_factor.defined() ? ", negation_factor" : "");
}

template class HashedNgramBag<float>;
template class HashedNgramBag<double>;

NgramLogCountRatio::NgramLogCountRatio(std::size_t num_buckets, std::size_t max_n)
    : num_buckets_(num_buckets), max_n_(max_n) {
  if (num_buckets < 2 || max_n < 1) {
    throw std::invalid_argument(fmt::format(
        "NgramLogCountRatio: num_buckets {} must be at least 2 and max_n {} at least 1", num_buckets, max_n));
  }
  counts_[0].assign(num_buckets, 0);
  counts_[1].assign(num_buckets, 0);
}

void NgramLogCountRatio::add(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                             const xt::xarray<std::int64_t>& labels) {
  if (labels.dimension() != 1 || ids.dimension() != 2 || labels.size() != ids.shape(0)) {
    throw std::invalid_argument(fmt::format("NgramLogCountRatio: labels {} must be [batch] for ids {}",
                                            format_shape(shape_of(labels)), format_shape(shape_of(ids))));
  }
  for (std::size_t b = 0; b < labels.size(); ++b) {
    if (labels(b) != 0 && labels(b) != 1) {
      throw std::invalid_argument(
          fmt::format("NgramLogCountRatio: label {} of document {} is not 0 or 1", labels(b), b));
    }
  }
  const auto buckets = document_ngram_buckets(ids, padding_mask, num_buckets_, max_n_);
  const std::size_t width = buckets.dimension() == 2 ? buckets.shape(1) : 0;
  for (std::size_t b = 0; b < labels.size(); ++b) {
    auto& counts = counts_[labels(b)];
    for (std::size_t k = 0; k < width; ++k) {
      const std::int64_t bucket = buckets(b, k);
      if (bucket != 0) ++counts[static_cast<std::size_t>(bucket)];
    }
    ++documents_[labels(b)];
  }
}

xt::xarray<double> NgramLogCountRatio::ratio(double alpha) const {
  if (!(alpha > 0.0) || std::isinf(alpha)) {
    throw std::invalid_argument(fmt::format("NgramLogCountRatio: alpha {} must be a finite number > 0", alpha));
  }
  double total[2] = {0.0, 0.0};
  for (int c = 0; c < 2; ++c)
    for (std::size_t b = 1; b < num_buckets_; ++b) total[c] += alpha + static_cast<double>(counts_[c][b]);
  xt::xarray<double> r = xt::zeros<double>({num_buckets_});
  for (std::size_t b = 1; b < num_buckets_; ++b) {
    const double p = (alpha + static_cast<double>(counts_[1][b])) / total[1];
    const double q = (alpha + static_cast<double>(counts_[0][b])) / total[0];
    r(b) = std::log(p / q);
  }
  return r;
}

}  // namespace tapegrad::nn
