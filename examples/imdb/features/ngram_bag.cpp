#include "examples/imdb/features/ngram_bag.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/embedding.hpp"
#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

namespace imdb::features {

using tapegrad::Tensor;

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
Tensor<T> HashedNgramBag<T>::forward(const xt::xarray<std::int64_t>& ids,
                                     const tapegrad::BoolArray& padding_mask) const {
  // Each n-gram of a bag weighted by its bucket's scale (torch's per_sample_weights): the batch's few
  // thousand n-grams, where scaling the table itself (weight * scale) would touch all of its rows
  // forward and backward.
  const auto bag_sum = [this](const xt::xarray<std::int64_t>& buckets) {
    if (!scale.defined()) return tapegrad::embedding_bag_sum(weight, buckets, std::int64_t{0});
    xt::xarray<T> per_sample = xt::xarray<T>::from_shape(buckets.shape());
    const T* s = scale.data().data();
    for (std::size_t i = 0; i < buckets.size(); ++i) per_sample.data()[i] = s[buckets.data()[i]];
    return tapegrad::embedding_bag_sum(weight, buckets, std::int64_t{0}, Tensor<T>(std::move(per_sample)));
  };
  if (negation.empty()) return bag_sum(tapegrad::nn::document_ngram_buckets(ids, padding_mask, num_buckets, max_n));
  const auto marked = negation.mark(ids, padding_mask);
  auto out = bag_sum(tapegrad::nn::document_ngram_buckets(marked, padding_mask, num_buckets, max_n));
  if (!negation_factor.defined()) return out;
  return tapegrad::add(
      out, tapegrad::mul(bag_sum(negated_word_buckets(marked, padding_mask, num_buckets)), negation_factor));
}

template <typename T>
void HashedNgramBag<T>::set_feature_scale(const xt::xarray<double>& per_bucket) {
  if (!scale.defined()) throw std::invalid_argument("HashedNgramBag: built without feature_scale, it has no scale");
  if (per_bucket.dimension() != 1 || per_bucket.size() != num_buckets) {
    throw std::invalid_argument(fmt::format("HashedNgramBag: the feature scale {} must be [{}]",
                                            tapegrad::format_shape(tapegrad::shape_of(per_bucket)), num_buckets));
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

}  // namespace imdb::features
