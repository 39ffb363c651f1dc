#include "examples/imdb/wide_and_deep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <xtensor/xoperation.hpp>

#include "tapegrad/autograd/elementwise.hpp"

namespace imdb {

using tapegrad::Tensor;

void WideAndDeepOptions::validate() const {
  deep.validate();
  if (wide_buckets == 1) throw std::invalid_argument("wide_buckets must be 0 (none) or at least 2, got 1");
  if (wide_buckets > 0 && wide_max_n < 1) {
    throw std::invalid_argument(fmt::format("wide_max_n must be at least 1, got {}", wide_max_n));
  }
  if (wide_feature_scale && (wide_buckets == 0 || deep.num_classes != 2)) {
    throw std::invalid_argument(
        fmt::format("wide_feature_scale needs a wide part (wide_buckets {}) and two classes (num_classes {})",
                    wide_buckets, deep.num_classes));
  }
  if (wide_negation_factor && wide_buckets == 0) {
    throw std::invalid_argument("wide_negation_factor needs a wide part (wide_buckets 0)");
  }
  if (wide_weight_by_length && wide_buckets == 0) {
    throw std::invalid_argument("wide_weight_by_length needs a wide part (wide_buckets 0)");
  }
}

template <typename T>
WideAndDeep<T>::WideAndDeep(const WideAndDeepOptions& o, tapegrad::Generator& gen) : options(o) {
  o.validate();
  deep = this->register_module("deep", std::make_shared<tapegrad::models::TransformerClassifier<T>>(o.deep, gen));
  if (o.wide_buckets > 0) {
    wide = this->register_module(
        "wide", std::make_shared<features::HashedNgramBag<T>>(o.wide_buckets, o.deep.num_classes, o.wide_max_n,
                                                              o.wide_feature_scale, o.wide_negation_factor));
    wide_weight = this->register_buffer(
        "wide_weight", o.wide_weight_by_length ? Tensor<T>(xt::xarray<T>{1, 0, 1, 1}) : Tensor<T>::ones({1}));
  }
}

template <typename T>
T WideAndDeep<T>::wide_weight_at(std::size_t length) const {
  if (!wide) return T(1);
  const auto& w = wide_weight.data();
  if (w.size() == 1) return w(0);
  const double n = std::clamp(static_cast<double>(std::max<std::size_t>(length, 1)), static_cast<double>(w(2)),
                              static_cast<double>(w(3)));
  return static_cast<T>(static_cast<double>(w(0)) + static_cast<double>(w(1)) * std::log(n));
}

template <typename T>
void WideAndDeep<T>::set_wide_weight(double a, double b, double shortest, double longest) {
  if (!wide) throw std::invalid_argument("set_wide_weight: the classifier has no wide part");
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(shortest) || !std::isfinite(longest) || shortest < 1.0 ||
      longest < shortest) {
    throw std::invalid_argument(fmt::format(
        "set_wide_weight: a {} and b {} must be finite, 1 <= shortest {} <= longest {}", a, b, shortest, longest));
  }
  auto& w = wide_weight.mutable_data();
  if (w.size() == 1) {
    if (b != 0.0) {
      throw std::invalid_argument(
          fmt::format("set_wide_weight: b {} needs a classifier built with wide_weight_by_length", b));
    }
    w(0) = static_cast<T>(a);
    return;
  }
  w = xt::xarray<T>{static_cast<T>(a), static_cast<T>(b), static_cast<T>(shortest), static_cast<T>(longest)};
}

template <typename T>
Tensor<T> WideAndDeepLogits<T>::total() const {
  if (!wide.defined()) return deep;
  if (xt::all(xt::equal(wide_weight, T(1)))) return tapegrad::add(deep, wide);
  xt::xarray<T> column = wide_weight;
  column.reshape({wide_weight.size(), std::size_t{1}});
  return tapegrad::add(deep, tapegrad::mul(wide, Tensor<T>(std::move(column))));
}

template <typename T>
Tensor<T> WideAndDeep<T>::forward(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask,
                                  tapegrad::models::ClassifierTrace<T>* trace) const {
  return forward_parts(ids, padding_mask, trace).total();
}

template <typename T>
WideAndDeepLogits<T> WideAndDeep<T>::forward_parts(const xt::xarray<std::int64_t>& ids,
                                                   const tapegrad::BoolArray& padding_mask,
                                                   tapegrad::models::ClassifierTrace<T>* trace) const {
  WideAndDeepLogits<T> logits;
  logits.deep = deep->forward(ids, padding_mask, trace);  // checks the shapes
  if (wide) {
    const std::size_t batch = ids.shape(0), length = ids.shape(1);
    logits.wide = wide->forward(ids, padding_mask);
    logits.wide_weight = xt::xarray<T>::from_shape({batch});
    for (std::size_t b = 0; b < batch; ++b) {
      std::size_t real = 0;
      for (std::size_t t = 0; t < length; ++t) real += padding_mask(b, t) ? 0 : 1;
      logits.wide_weight(b) = wide_weight_at(real);
    }
  }
  return logits;
}

template struct WideAndDeepLogits<float>;
template struct WideAndDeepLogits<double>;
template class WideAndDeep<float>;
template class WideAndDeep<double>;

}  // namespace imdb
