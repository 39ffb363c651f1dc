// operator<< prints a tensor as torch's repr does. Every expected string below was printed by torch
// 1.13 for the same values (tests/fixtures/make_print_strings.py), with tapegrad's spellings of two
// suffixes: dtype=float64 and grad_fn=<AddBackward> (torch: dtype=torch.float64, AddBackward0).
#include <catch2/catch.hpp>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/autograd/ops.hpp"

using namespace tapegrad;

namespace {
template <typename T>
std::string str(const Tensor<T>& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}
template <typename T>
Tensor<T> iota(std::size_t n, T (*f)(std::size_t), const Shape& shape) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = f(i);
  return Tensor<T>::from_vector(v, shape);
}
bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
using TF = Tensor<float>;
using TD = Tensor<double>;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("operator<< prints values with torch's formatter", "[tensor][print]") {
  CHECK(str(TF::from_vector({1, 2, 3}, {3})) == "tensor([1., 2., 3.])");
  CHECK(str(TD::from_vector({1.5, -2.25, 3.125, 4}, {2, 2})) == R"(tensor([[ 1.5000, -2.2500],
        [ 3.1250,  4.0000]], dtype=float64))");
  CHECK(str(TF::scalar(3.5f)) == "tensor(3.5000)");
  CHECK(str(TD::scalar(2.0)) == "tensor(2., dtype=float64)");
  CHECK(str(TF::from_vector({1e-5f, 1.0f, -2.5f}, {3})) == "tensor([ 1.0000e-05,  1.0000e+00, -2.5000e+00])");
  CHECK(str(TD::from_vector({1e9, 1.0}, {2})) == "tensor([1.0000e+09, 1.0000e+00], dtype=float64)");
  CHECK(str(TF::from_vector({1, 5000}, {2})) == "tensor([1.0000e+00, 5.0000e+03])");
  CHECK(str(TD::from_vector({kNan, kInf, -kInf, 1.5}, {4})) ==
        "tensor([   nan,    inf,   -inf, 1.5000], dtype=float64)");
  CHECK(str(TF::from_vector({static_cast<float>(-kNan), 2.0f, static_cast<float>(-kInf)}, {3})) ==
        "tensor([nan, 2., -inf])");
  CHECK(str(TF::zeros({2})) == "tensor([0., 0.])");
  CHECK(str(TF::from_vector({-0.0f, 0.5f}, {2})) == "tensor([-0.0000, 0.5000])");
  CHECK(str(iota<double>(24, [](std::size_t i) { return 0.5 * static_cast<double>(i); }, {2, 3, 4})) ==
        R"(tensor([[[ 0.0000,  0.5000,  1.0000,  1.5000],
         [ 2.0000,  2.5000,  3.0000,  3.5000],
         [ 4.0000,  4.5000,  5.0000,  5.5000]],

        [[ 6.0000,  6.5000,  7.0000,  7.5000],
         [ 8.0000,  8.5000,  9.0000,  9.5000],
         [10.0000, 10.5000, 11.0000, 11.5000]]], dtype=float64))");
}

TEST_CASE("operator<< wraps long rows at 80 columns", "[tensor][print]") {
  CHECK(str(iota<float>(30, [](std::size_t i) { return static_cast<float>(i) / 7.0f; }, {30})) ==
        R"(tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,
        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,
        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,
        3.8571, 4.0000, 4.1429]))");
}

TEST_CASE("operator<< summarises more than 1000 elements with the first and last 3 of each dim", "[tensor][print]") {
  CHECK(str(iota<float>(1001, [](std::size_t i) { return static_cast<float>(i); }, {1001})) ==
        "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])");
  // Exactly 1000 elements are printed in full.
  CHECK(str(TF::zeros({1000})).find("...") == std::string::npos);
  CHECK(str(iota<double>(2000, [](std::size_t i) { return static_cast<double>(i) / 3.0; }, {40, 50})) ==
        R"(tensor([[0.0000e+00, 3.3333e-01, 6.6667e-01,  ..., 1.5667e+01, 1.6000e+01,
         1.6333e+01],
        [1.6667e+01, 1.7000e+01, 1.7333e+01,  ..., 3.2333e+01, 3.2667e+01,
         3.3000e+01],
        [3.3333e+01, 3.3667e+01, 3.4000e+01,  ..., 4.9000e+01, 4.9333e+01,
         4.9667e+01],
        ...,
        [6.1667e+02, 6.1700e+02, 6.1733e+02,  ..., 6.3233e+02, 6.3267e+02,
         6.3300e+02],
        [6.3333e+02, 6.3367e+02, 6.3400e+02,  ..., 6.4900e+02, 6.4933e+02,
         6.4967e+02],
        [6.5000e+02, 6.5033e+02, 6.5067e+02,  ..., 6.6567e+02, 6.6600e+02,
         6.6633e+02]], dtype=float64))");
  const std::string cube =
      str(iota<float>(1200, [](std::size_t i) { return static_cast<float>(i) - 600.0f; }, {12, 10, 10}));
  CHECK(starts_with(cube, R"(tensor([[[-600., -599., -598.,  ..., -593., -592., -591.],
         [-590., -589., -588.,  ..., -583., -582., -581.],
         [-580., -579., -578.,  ..., -573., -572., -571.],
         ...,
         [-530., -529., -528.,  ..., -523., -522., -521.],)"));
  CHECK(cube.find(R"(
         [-310., -309., -308.,  ..., -303., -302., -301.]],

        ...,

        [[ 300.,  301.,  302.,  ...,  307.,  308.,  309.],
)") != std::string::npos);
  CHECK(ends_with(cube, R"(
         [ 590.,  591.,  592.,  ...,  597.,  598.,  599.]]]))"));
}

TEST_CASE("operator<< prints empty tensors, grad_fn, requires_grad and undefined tensors", "[tensor][print]") {
  CHECK(str(TF::zeros({0})) == "tensor([])");
  CHECK(str(TD::zeros({0, 3})) == "tensor([], size=(0, 3), dtype=float64)");
  CHECK(str(TD::from_vector({0.1, 0.2}, {2}, true)) == "tensor([0.1000, 0.2000], dtype=float64, requires_grad=True)");
  const TD a = TD::from_vector({1, 2}, {1, 2}, true);
  CHECK(str(a + a) == "tensor([[2., 4.]], dtype=float64, grad_fn=<AddBackward>)");
  CHECK(str((a + a).detach()) == "tensor([[2., 4.]], dtype=float64)");
  CHECK(str(log_softmax(TF::from_vector({1, 2}, {2}, true), 0)).find("grad_fn=<LogSoftmaxBackward>") !=
        std::string::npos);
  // A suffix that does not fit on the last line goes on its own line, indented under the values.
  const TD w = iota<double>(16, [](std::size_t i) { return static_cast<double>(i) / 9.0; }, {16});
  CHECK(str(exp(w.detach().requires_grad_())) ==
        R"(tensor([1.0000, 1.1175, 1.2488, 1.3956, 1.5596, 1.7429, 1.9477, 2.1766, 2.4324,
        2.7183, 3.0377, 3.3947, 3.7937, 4.2395, 4.7377, 5.2945], dtype=float64,
       grad_fn=<ExpBackward>))");
  CHECK(str(TD()) == "tensor(undefined)");
}
