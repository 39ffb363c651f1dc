// Tensor itself: factories, shape queries, item/to_vector, requires_grad_, detach, seeded random draws,
// and shapes as text.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;

namespace {
double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}
}  // namespace

TEST_CASE("zeros, ones and full fill the shape they are given", "[tensor]") {
  auto z = Tensor<double>::zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.to_vector() == std::vector<double>(6, 0.0));
  CHECK_FALSE(z.requires_grad());
  auto o = Tensor<float>::ones({4}, true);
  CHECK(o.to_vector() == std::vector<float>(4, 1.0f));
  CHECK(o.requires_grad());
  CHECK(o.is_leaf());
  auto f = Tensor<double>::full({3, 1}, -2.5);
  CHECK(f.shape() == Shape{3, 1});
  CHECK(f.to_vector() == std::vector<double>(3, -2.5));
  auto s = Tensor<double>::full({}, 7.0);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.item() == 7.0);
  auto e = Tensor<double>::zeros({2, 0, 3});
  CHECK(e.numel() == 0);
  CHECK(e.shape() == Shape{2, 0, 3});
  CHECK(e.to_vector().empty());
}

TEST_CASE("scalar and from_vector", "[tensor]") {
  auto s = Tensor<double>::scalar(3.5, true);
  CHECK(s.shape() == Shape{});
  CHECK(s.item() == 3.5);
  CHECK(s.requires_grad());
  auto t = Tensor<double>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.data()(0, 2) == 3.0);  // row-major
  CHECK(t.data()(1, 0) == 4.0);
  CHECK(t.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
  auto empty = Tensor<float>::from_vector({}, {0, 4});
  CHECK(empty.shape() == Shape{0, 4});
}

TEST_CASE("from_vector rejects a count that does not fill the shape", "[tensor]") {
  CHECK_THROWS_AS(Tensor<double>::from_vector({1, 2, 3, 4, 5}, {2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(Tensor<double>::from_vector({1, 2, 3, 4, 5}, {2, 3}), ShapeError);
  CHECK_THROWS_WITH(Tensor<double>::from_vector({1, 2, 3, 4, 5}, {2, 3}),
                    "from_vector: 5 values cannot fill shape [2, 3] (6 elements)");
  CHECK_THROWS_WITH(Tensor<float>::from_vector({1, 2}, {}), "from_vector: 2 values cannot fill shape [] (1 elements)");
}

TEST_CASE("arange walks from start up to end like torch.arange", "[tensor]") {
  CHECK(Tensor<double>::arange(0, 5).to_vector() == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(Tensor<double>::arange(0, 5).shape() == Shape{5});
  CHECK(Tensor<double>::arange(1, 2, 0.25).to_vector() == std::vector<double>{1, 1.25, 1.5, 1.75});
  // torch.arange(5, 0, -1.5) == [5.0, 3.5, 2.0, 0.5]
  CHECK(Tensor<double>::arange(5, 0, -1.5).to_vector() == std::vector<double>{5, 3.5, 2, 0.5});
  CHECK(Tensor<float>::arange(-1, -4, -1).to_vector() == std::vector<float>{-1, -2, -3});
  CHECK(Tensor<double>::arange(0, 1, 0.3).to_vector().size() == 4);  // ceil(1 / 0.3): 0, 0.3, 0.6, 0.9
  auto empty = Tensor<double>::arange(2, 2);
  CHECK(empty.shape() == Shape{0});
}

TEST_CASE("arange rejects a zero step, a step pointing away from end, and infinite bounds", "[tensor]") {
  CHECK_THROWS_AS(Tensor<double>::arange(0, 5, 0), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<double>::arange(0, 5, 0), Catch::Contains("arange") && Catch::Contains("nonzero"));
  CHECK_THROWS_AS(Tensor<double>::arange(0, 5, -1), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<double>::arange(0, 5, -1), "arange: the range [0, 5) cannot be walked with step -1");
  CHECK_THROWS_AS(Tensor<double>::arange(5, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(Tensor<double>::arange(0, INFINITY), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<double>::arange(0, INFINITY), Catch::Contains("finite"));
  CHECK_THROWS_AS(Tensor<float>::arange(0, 1, NAN), std::invalid_argument);
  // A count no std::size_t conversion may take (it would be undefined behaviour), and none that fits memory.
  CHECK_THROWS_WITH(Tensor<double>::arange(0, 1e30), "arange: [0, 1e+30) with step 1 has 1e+30 elements, too many");
}

TEST_CASE("a shape whose element count overflows is refused before anything is allocated", "[tensor]") {
  // 2^32 x 2^32 elements wrap around to 0: xtensor alone would make an empty buffer under that shape.
  const Shape huge{std::size_t{1} << 32, std::size_t{1} << 32};
  CHECK_THROWS_AS(numel(huge), ShapeError);
  CHECK_THROWS_WITH(numel(huge), "the shape [4294967296, 4294967296] has more elements than a std::size_t counts");
  CHECK_THROWS_AS(Tensor<float>::zeros(huge), ShapeError);
  CHECK_THROWS_AS(Tensor<float>::full(huge, 1.0f), ShapeError);
  Generator gen(0);
  CHECK_THROWS_AS(Tensor<float>::uniform(huge, 0.0f, 1.0f, gen), ShapeError);
  CHECK_THROWS_AS(Tensor<double>::normal(huge, 0.0, 1.0, gen), ShapeError);
  CHECK_THROWS_AS(Tensor<double>::from_vector({1.0}, huge), ShapeError);
  CHECK_THROWS_AS(expand(Tensor<float>::ones({1, 1}), huge), ShapeError);
  CHECK(numel({std::size_t{1} << 31, std::size_t{1} << 32}) == std::size_t{1} << 63);  // the largest still counted
}

TEST_CASE("shape, dim, size (with negative dims) and numel", "[tensor]") {
  auto t = Tensor<double>::zeros({2, 3, 4});
  CHECK(t.dim() == 3);
  CHECK(t.size(0) == 2);
  CHECK(t.size(-1) == 4);
  CHECK(t.size(-3) == 2);
  CHECK(t.numel() == 24);
  CHECK_THROWS_AS(t.size(3), std::invalid_argument);
  CHECK_THROWS_WITH(t.size(3), "size: dim 3 is out of range for a tensor of rank 3 (expected -3 to 2)");
  CHECK_THROWS_WITH(t.size(-4), "size: dim -4 is out of range for a tensor of rank 3 (expected -3 to 2)");
  CHECK_THROWS_AS(Tensor<double>::scalar(1).size(0), std::invalid_argument);
}

TEST_CASE("item needs exactly one element", "[tensor]") {
  CHECK(Tensor<double>::from_vector({4.25}, {1, 1}).item() == 4.25);
  CHECK(Tensor<float>::scalar(-1.5f).item() == -1.5f);
  CHECK_THROWS_AS(Tensor<double>::zeros({2}).item(), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<double>::zeros({2, 3}).item(),
                    "item: only a one-element tensor has an item, this one has shape [2, 3]");
  CHECK_THROWS_AS(Tensor<double>::zeros({0}).item(), std::invalid_argument);
}

TEST_CASE("item<U> converts as LibTorch's and refuses a value U cannot hold", "[tensor]") {
  const auto d = Tensor<double>::scalar(-2.75);
  STATIC_REQUIRE(std::is_same_v<decltype(d.item<float>()), float>);
  CHECK(d.item<float>() == -2.75f);
  CHECK(d.item<std::int64_t>() == -2);  // toward zero
  CHECK(d.item<int>() == -2);
  CHECK(d.item<bool>());
  CHECK_FALSE(Tensor<float>::scalar(0.0f).item<bool>());
  CHECK(Tensor<float>::scalar(3.5f).item<double>() == 3.5);
  CHECK(Tensor<double>::scalar(INFINITY).item<float>() == INFINITY);
  CHECK(std::isnan(Tensor<double>::scalar(NAN).item<float>()));
  CHECK_THROWS_AS(Tensor<double>::scalar(NAN).item<int>(), std::range_error);
  CHECK_THROWS_WITH(Tensor<double>::scalar(3e9).item<std::int32_t>(),
                    Catch::Contains("item") && Catch::Contains("3000000000") && Catch::Contains("32-bit integer"));
  CHECK_THROWS_WITH(Tensor<double>::scalar(-1.0).item<unsigned>(), Catch::Contains("-1"));
  CHECK_THROWS_WITH(Tensor<double>::scalar(1e300).item<float>(),
                    Catch::Contains("1e+300") && Catch::Contains("32-bit floating-point"));
  CHECK(Tensor<double>::scalar(9.2e18).item<std::int64_t>() == 9200000000000000000LL);
  CHECK_THROWS_AS(Tensor<double>::scalar(9.3e18).item<std::int64_t>(), std::range_error);
  CHECK_THROWS_WITH(Tensor<double>::zeros({2}).item<float>(), Catch::Contains("one-element"));
}

TEST_CASE("an undefined tensor says so instead of crashing", "[tensor]") {
  Tensor<double> t;
  CHECK_FALSE(t.defined());
  CHECK_THROWS_WITH(t.shape(), Catch::Contains("undefined"));
  CHECK_THROWS_AS(t.data(), std::logic_error);
}

TEST_CASE("requires_grad_ can be changed on leaves only", "[tensor]") {
  auto x = Tensor<double>::from_vector({1, 2}, {2});
  CHECK_FALSE(x.requires_grad());
  CHECK(&x.requires_grad_() == &x);
  CHECK(x.requires_grad());
  auto y = x * 2.0;
  CHECK_FALSE(y.is_leaf());
  CHECK(y.grad_fn_name() == "mul_scalar");
  CHECK_NOTHROW(y.requires_grad_(true));  // already true: nothing changes, as in torch
  CHECK_THROWS_AS(y.requires_grad_(false), std::logic_error);
  CHECK_THROWS_WITH(y.requires_grad_(false),
                    Catch::Contains("non-leaf") && Catch::Contains("mul_scalar") && Catch::Contains("detach"));
  CHECK(y.requires_grad());
  x.requires_grad_(false);
  CHECK_FALSE((x * 2.0).requires_grad());
}

TEST_CASE("detach shares the value but not the history or the gradient", "[tensor]") {
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  auto y = x * 2.0;
  auto d = y.detach();
  CHECK(d.is_leaf());
  CHECK_FALSE(d.requires_grad());
  CHECK(d.grad_fn_name().empty());
  CHECK(d.shape() == Shape{3});
  CHECK(d.to_vector() == std::vector<double>{2, 4, 6});
  CHECK(d.saved() == y.saved());  // the same buffer, no copy
  d.requires_grad_();
  auto z = d * d;
  z.backward(xt::xarray<double>({1.0, 1.0, 1.0}));
  CHECK(d.grad() == xt::xarray<double>({4.0, 8.0, 12.0}));
  CHECK_FALSE(x.has_grad());  // nothing flowed back through the detached copy
}

TEST_CASE("uniform and normal are reproducible from a seed", "[tensor]") {
  Generator g1(42), g2(42), g3(43);
  auto a = Tensor<double>::uniform({100}, -1.0, 1.0, g1);
  auto b = Tensor<double>::uniform({100}, -1.0, 1.0, g2);
  auto c = Tensor<double>::uniform({100}, -1.0, 1.0, g3);
  CHECK(a.to_vector() == b.to_vector());
  CHECK(a.to_vector() != c.to_vector());
  auto na = Tensor<float>::normal({3, 7}, 0.0f, 1.0f, g1);
  auto nb = Tensor<float>::normal({3, 7}, 0.0f, 1.0f, g2);
  CHECK(na.to_vector() == nb.to_vector());
  CHECK(na.shape() == Shape{3, 7});
  // The stream continues: a second draw differs from the first.
  CHECK(Tensor<double>::uniform({100}, -1.0, 1.0, g1).to_vector() != a.to_vector());
  Generator g4(42);
  CHECK(Tensor<double>::uniform({5}, 0.0, 1.0, g4, true).requires_grad());
}

TEST_CASE("uniform draws have the mean, spread and range of a uniform distribution", "[tensor]") {
  Generator gen(7);
  const auto v = Tensor<double>::uniform({10000}, -2.0, 4.0, gen).to_vector();
  CHECK(*std::min_element(v.begin(), v.end()) >= -2.0);
  CHECK(*std::max_element(v.begin(), v.end()) < 4.0);
  // mean 1, std 6 / sqrt(12) = 1.732; the standard error of the mean over 10k draws is 0.017.
  CHECK(mean_of(v) == Approx(1.0).margin(0.07));
  CHECK(std_of(v) == Approx(6.0 / std::sqrt(12.0)).margin(0.05));
}

TEST_CASE("float uniform draws never round up to high", "[tensor]") {
  // [1, 1 + ulp): in double most draws lie closer to 1 + ulp than to 1, and would round to high.
  const float low = 1.0f, high = std::nextafter(1.0f, 2.0f);
  Generator gen(3);
  const auto v = Tensor<float>::uniform({1000}, low, high, gen).to_vector();
  CHECK(std::all_of(v.begin(), v.end(), [&](float x) { return x == low; }));
  CHECK(Tensor<float>::uniform({4}, 2.0f, 2.0f, gen).to_vector() == std::vector<float>(4, 2.0f));
}

TEST_CASE("normal draws have the requested mean and standard deviation", "[tensor]") {
  Generator gen(11);
  const auto v = Tensor<double>::normal({10000}, 3.0, 2.0, gen).to_vector();
  // The standard error of the mean is 2 / 100 = 0.02; of the std about 0.014.
  CHECK(mean_of(v) == Approx(3.0).margin(0.08));
  CHECK(std_of(v) == Approx(2.0).margin(0.06));
  Generator gen_f(12);
  const auto f = Tensor<float>::normal({10000}, -1.0f, 0.5f, gen_f).to_vector();
  const std::vector<double> fd(f.begin(), f.end());
  CHECK(mean_of(fd) == Approx(-1.0).margin(0.02));
  CHECK(std_of(fd) == Approx(0.5).margin(0.015));
}

TEST_CASE("uniform and normal reject an empty range or a negative stddev", "[tensor]") {
  Generator gen(0);
  CHECK_THROWS_AS(Tensor<double>::uniform({2}, 1.0, 0.0, gen), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<double>::uniform({2}, 1.0, 0.0, gen), Catch::Contains("uniform") && Catch::Contains("low"));
  CHECK_THROWS_AS(Tensor<float>::normal({2}, 0.0f, -1.0f, gen), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<float>::normal({2}, 0.0f, -1.0f, gen), Catch::Contains("normal") && Catch::Contains("-1"));
  CHECK(Tensor<double>::normal({3}, 5.0, 0.0, gen).to_vector() == std::vector<double>(3, 5.0));
  // As torch: infinite bounds, or a range wider than the type holds, would make every draw NaN or infinite.
  CHECK_THROWS_AS(Tensor<float>::uniform({2}, -INFINITY, INFINITY, gen), ShapeError);
  CHECK_THROWS_AS(Tensor<float>::uniform({2}, 0.0f, NAN, gen), ShapeError);
  CHECK_THROWS_WITH(Tensor<float>::uniform({2}, -3e38f, 3e38f, gen),
                    Catch::Contains("uniform: expects finite low and high with high - low <=") &&
                        Catch::Contains("got low -3e+38 and high 3e+38"));
  for (const float v : Tensor<float>::uniform({2}, -1e38f, 1e38f, gen).to_vector()) CHECK(std::isfinite(v));
}

namespace {
// Out of line, so the constant below is materialized at the call site as in the miscompiled case.
[[gnu::noinline]] std::vector<std::int64_t> passed_through(const std::vector<std::int64_t>& v) { return v; }
}  // namespace

TEST_CASE("the compiler keeps the values of a constant vector (GCC 12 with AVX-512 broadcast the first)", "[build]") {
  // With -march=native on an AVX-512 machine GCC 12.2 turned this list into eight ones; CMakeLists.txt
  // adds -mno-avx512f for GCC. This test fails if a flag set brings the miscompile back.
  const auto v = passed_through({1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(v == std::vector<std::int64_t>{1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(std::count(v.begin(), v.end(), 0) == 3);
}

TEST_CASE("format_shape and python_tuple write shapes as messages and Python's repr do", "[tensor]") {
  CHECK(format_shape({}) == "[]");
  CHECK(format_shape({2, 3}) == "[2, 3]");
  CHECK(python_tuple({}) == "()");
  CHECK(python_tuple({8}) == "(8,)");
  CHECK(python_tuple({4, 5}) == "(4, 5)");
}

TEST_CASE("a shape prints as format_shape writes it", "[tensor]") {
  std::ostringstream out;
  out << Tensor<float>::zeros({2, 3}).shape() << " " << Shape{} << " " << Shape{7};
  CHECK(out.str() == "[2, 3] [] [7]");
}
