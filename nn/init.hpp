/// @file
/// Parameter initialization (torch.nn.init): fills a tensor in place from a Generator, with torch's
/// formulas for the fans, the gains and the bounds, so a model of one's own starts as torch's would.
///
/// Each function writes into the values of the tensor it is handed (a handle: `init::zeros_(linear.bias)`
/// changes the module's bias) without recording on the tape, as torch's do under no_grad, and returns
/// the same handle. A non-leaf tensor (the output of an op) is refused: writing into
/// it would change values its graph's backward reads. A zero-element tensor is left as it is (torch
/// warns and does the same). The draws come from tapegrad's Generator, so they match torch's in
/// distribution, not value by value.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad::nn::init {

/// torch.nn.init.calculate_gain: the gain recommended for a nonlinearity, by torch's name:
/// "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d" (2d, 3d), "sigmoid" -> 1, "tanh" -> 5/3,
/// "relu" -> sqrt(2), "leaky_relu" -> sqrt(2 / (1 + param^2)) (param = negative slope, default 0.01),
/// "selu" -> 3/4. Throws std::invalid_argument naming an unknown nonlinearity or a slope that is not
/// finite.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

/// torch.nn.init._calculate_fan_in_and_fan_out: for a shape [out, in, k...], fan_in = in * prod(k),
/// fan_out = out * prod(k). Throws ShapeError for fewer than 2 dimensions.
std::pair<std::size_t, std::size_t> calculate_fan_in_and_fan_out(const Shape& shape);

/// Which fan kaiming_* scale by (torch's mode='fan_in' | 'fan_out').
enum class FanMode { FanIn, FanOut };

/// U(a, b), N(mean, std), a constant, zeros and ones (torch.nn.init.uniform_, normal_, constant_,
/// zeros_, ones_).
///@{
template <typename T>
Tensor<T> uniform_(Tensor<T> tensor, Generator& gen, double a = 0.0, double b = 1.0);
template <typename T>
Tensor<T> normal_(Tensor<T> tensor, Generator& gen, double mean = 0.0, double std = 1.0);
template <typename T>
Tensor<T> constant_(Tensor<T> tensor, double value);
template <typename T>
Tensor<T> zeros_(Tensor<T> tensor);
template <typename T>
Tensor<T> ones_(Tensor<T> tensor);
///@}

/// N(mean, std) truncated to [a, b], drawn by inverting the normal CDF on a uniform draw between the
/// CDF's values at a and b, as torch.nn.init.trunc_normal_ does; every value lies in [a, b]. Throws
/// for a > b or std < 0.
template <typename T>
Tensor<T> trunc_normal_(Tensor<T> tensor, Generator& gen, double mean = 0.0, double std = 1.0, double a = -2.0,
                        double b = 2.0);

/// Glorot and Bengio (2010): U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)), or
/// N(0, gain * sqrt(2 / (fan_in + fan_out))) (torch.nn.init.xavier_uniform_, xavier_normal_).
///@{
template <typename T>
Tensor<T> xavier_uniform_(Tensor<T> tensor, Generator& gen, double gain = 1.0);
template <typename T>
Tensor<T> xavier_normal_(Tensor<T> tensor, Generator& gen, double gain = 1.0);
///@}

/// He et al. (2015): with std = calculate_gain(nonlinearity, a) / sqrt(fan), U(-sqrt(3) std, sqrt(3)
/// std) or N(0, std) (torch.nn.init.kaiming_uniform_, kaiming_normal_, with torch's defaults: a = 0,
/// fan_in, "leaky_relu"). nn::Linear's weight is kaiming_uniform_(w, gen, sqrt(5)).
///@{
template <typename T>
Tensor<T> kaiming_uniform_(Tensor<T> tensor, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                           const std::string& nonlinearity = "leaky_relu");
template <typename T>
Tensor<T> kaiming_normal_(Tensor<T> tensor, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                          const std::string& nonlinearity = "leaky_relu");
///@}

}  // namespace tapegrad::nn::init
