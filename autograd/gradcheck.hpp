/// @file
/// gradcheck: compares the tape's gradients with central finite differences, in double precision.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Step and tolerances of gradcheck().
struct GradcheckOptions {
  double eps = 1e-6;   ///< finite-difference step
  double atol = 1e-5;  ///< an element passes if |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
  std::uint64_t seed = 0;  ///< for the random output weights
};

/// What gradcheck() found; converts to true when every element passed.
struct GradcheckResult {
  bool ok = true;
  std::string message;  ///< on failure: the input, the element, the analytic and numeric values
  explicit operator bool() const { return ok; }
};

/// The function gradcheck() differentiates: double inputs to one double output.
using GradcheckFunction = std::function<Tensor<double>(const std::vector<Tensor<double>>& inputs)>;

/// Checks every element of every input that requires grad. The output y = f(inputs) is reduced to
/// the scalar sum(w * y) with fixed random weights w, so one backward pass checks the whole
/// vector-Jacobian product; each input element is then perturbed by +-eps (in place, restored after)
/// and the central difference compared with the analytic gradient. Inputs that do not require grad
/// must receive none. Parameters held by a module can be passed as inputs: they are perturbed in place.
GradcheckResult gradcheck(const GradcheckFunction& f, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace tapegrad
