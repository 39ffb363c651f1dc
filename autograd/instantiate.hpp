/// @file
/// Explicit instantiation of an op template for float and double from its name alone: the
/// signature is the declaration's, so it is written once, in the header.
#pragma once

/// Instantiates the function template `op` (not overloaded) for float and double.
#define TAPEGRAD_INSTANTIATE(op)          \
  template decltype(op<float>) op<float>; \
  template decltype(op<double>) op<double>

/// Instantiates the overload of `op` whose type is `signature<T>` (an alias template of a function
/// type, shared by the overloads of that shape) for float and double.
#define TAPEGRAD_INSTANTIATE_AS(signature, op) \
  template signature<float> op<float>;         \
  template signature<double> op<double>
