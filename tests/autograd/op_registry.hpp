// The op table (after PyTorch's OpInfo): one entry per op and configuration, from which the generic
// checks are derived: gradcheck in double, torch parity in float and double against the committed
// fixtures, method form against function form, and the per-op benchmark cases.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad::testing {

/// An op applied to its differentiable inputs, in the order of OpInfo::inputs.
template <typename T>
using OpFunction = std::function<Tensor<T>(const std::vector<Tensor<T>>&)>;

/// One form of an op in both dtypes, made from one generic lambda taking the inputs' vector.
class OpForm {
 public:
  OpForm() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, OpForm>>>
  OpForm(F f) : f32_(f), f64_(std::move(f)) {}  // NOLINT: a lambda converts implicitly, as to std::function
  explicit operator bool() const { return static_cast<bool>(f64_); }
  template <typename T>
  const OpFunction<T>& get() const {
    if constexpr (std::is_same_v<T, float>)
      return f32_;
    else
      return f64_;
  }

 private:
  OpFunction<float> f32_;
  OpFunction<double> f64_;
};

/// A differentiable input: its name in the fixture file, its sample shape and the range of its
/// uniform sample values (kept where the op is smooth: a log's argument above 0, a probability in (0, 1)).
struct OpInput {
  std::string name;
  Shape shape;
  double low = -1.0, high = 1.0;
};

/// One op in one configuration.
struct OpInfo {
  OpInfo(std::string name_, std::vector<OpInput> inputs_, OpForm function_, OpForm method_ = {},
         std::vector<std::string> fixtures_ = {}, std::vector<Shape> bench_ = {}, GradcheckOptions gradcheck_ = {})
      : name(std::move(name_)),
        inputs(std::move(inputs_)),
        function(std::move(function_)),
        method(std::move(method_)),
        fixtures(std::move(fixtures_)),
        bench(std::move(bench_)),
        gradcheck(gradcheck_) {}
  std::string name;             ///< unique; the benchmark case is "op:<name>"
  std::vector<OpInput> inputs;  ///< what both forms take, in order
  OpForm function;              ///< the free function (tapegrad::softmax(x, 1))
  OpForm method;                ///< the Tensor method (x.softmax(1)), when there is one
  /// Cases of tests/fixtures/ops.safetensors this entry computes, on the inputs of the same names.
  std::vector<std::string> fixtures;
  std::vector<Shape> bench;  ///< the inputs' shapes of the benchmark case; none: no benchmark case
  GradcheckOptions gradcheck;
  /// The inputs' shapes of further gradcheck samples (a 0-d tensor, other ranks), beyond `inputs`.
  std::vector<std::vector<Shape>> more_samples;

  /// This entry, gradchecked also on those shapes.
  OpInfo also_on(std::vector<std::vector<Shape>> shapes) && {
    more_samples = std::move(shapes);
    return std::move(*this);
  }
};

/// Every entry, in the order of the fixture script where there is one.
const std::vector<OpInfo>& op_registry();

/// The entry of that name; throws naming it when there is none.
const OpInfo& find_op(const std::string& name);

/// Fresh leaves that require grad: each input's sample shape (or the given shapes) filled uniformly
/// in its range from a generator seeded with seed.
template <typename T>
std::vector<Tensor<T>> sample_inputs(const OpInfo& op, std::uint64_t seed, const std::vector<Shape>& shapes = {});

}  // namespace tapegrad::testing
