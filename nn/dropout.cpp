#include "tapegrad/nn/dropout.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/autograd/dropout.hpp"

namespace tapegrad::nn {

namespace {
void check_p(double p) {
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument(fmt::format("Dropout: p must lie in [0, 1], got {}", p));
}
}  // namespace

template <typename T>
Dropout<T>::Dropout(double p, std::uint64_t seed) : p(p), gen_(std::make_shared<Generator>(seed)) {
  check_p(p);
  this->register_generator("generator", gen_);
}

template <typename T>
Dropout<T>::Dropout(double p, std::shared_ptr<Generator> gen) : p(p), gen_(std::move(gen)) {
  check_p(p);
  if (!gen_) throw std::invalid_argument("Dropout: the shared generator is null");
  this->register_generator("generator", gen_);
}

template <typename T>
Tensor<T> Dropout<T>::forward(const Tensor<T>& x) const {
  if (!this->is_training() || p == 0.0) return x;
  return dropout(x, p, true, *gen_);
}

template <typename T>
std::string Dropout<T>::extra_repr() const {
  return "p=" + python_float(p) + ", inplace=False";
}

template class Dropout<float>;
template class Dropout<double>;

}  // namespace tapegrad::nn
