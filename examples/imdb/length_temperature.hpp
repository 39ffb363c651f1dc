// Temperature scaling that depends on each input's length (train::fit_temperature is the plain one):
// a model that sums evidence over its input, as the n-gram part of train_imdb's classifier does, grows
// more confident the longer the input, so that one temperature leaves short reviews underconfident
// and long ones overconfident.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

namespace imdb {

// softmax(logits * s(n)) with the inverse temperature s(n) = a + b ln(clamp(n, shortest, longest)) for
// an input of n tokens, n clamped to the lengths it was fitted on; b < 0 undoes the growing confidence.
// A plain temperature T is a = 1 / T, b = 0.
struct LengthTemperature {
  double a = 1.0, b = 0.0;
  double shortest = 1.0, longest = 1.0;

  // s(length); a length of 0 counts as 1.
  double inverse(std::size_t length) const;
  double temperature(std::size_t length) const { return 1.0 / inverse(length); }
  // The plain temperature T.
  static LengthTemperature constant(double temperature);
  // The problem that makes it unusable (a non-finite value, shortest < 1 or above longest, s not
  // positive at shortest or at longest), or an empty string.
  std::string problem() const;
  // "a b shortest longest", each to 17 significant digits: parse() reads back the same values.
  std::string to_string() const;
  // Reads to_string()'s form; throws std::invalid_argument for anything else or a problem().
  static LengthTemperature parse(const std::string& text);
};

// logits [N, C] times ln n row by row, n = lengths[i] (at least 1): what b multiplies in a fit of a + b
// ln n by fit_logit_weights. Throws std::invalid_argument for a lengths size other than N.
xt::xarray<double> times_log_length(const xt::xarray<double>& logits, const std::vector<std::size_t>& lengths);

// The (a, b) that minimize the mean negative log-likelihood of softmax(logits * s(n)) on (logits [N,
// C], labels, lengths [N]), fitted by fit_logit_weights over the parts {logits, logits * ln n}, with
// shortest and longest the extreme lengths given. Falls back to the plain train::fit_temperature when
// s(n) would not stay positive over [shortest, longest]. Returns the identity for N = 0. Throws
// std::invalid_argument as fit_logit_weights does, and for a lengths size other than N.
LengthTemperature fit_length_temperature(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels,
                                         const std::vector<std::size_t>& lengths);

// softmax(logits[i] * t.inverse(lengths[i])) row by row: [N, C] -> [N, C]. Throws
// std::invalid_argument for a lengths size other than N or a temperature with a problem().
xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, const LengthTemperature& t,
                                            const std::vector<std::size_t>& lengths);

}  // namespace imdb
