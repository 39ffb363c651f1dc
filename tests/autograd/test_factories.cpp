// The free factory functions (zeros, ones, full, arange, rand, randn): torch's names, float unless
// asked for, each equal to the Tensor<T> factory it stands for.
#include <catch2/catch.hpp>
#include <type_traits>
#include <vector>

#include "tapegrad/autograd/factories.hpp"

using namespace tapegrad;

TEST_CASE("zeros, ones and full are torch's, float unless asked for", "[factories]") {
  const auto z = zeros({2, 3});
  STATIC_REQUIRE(std::is_same_v<decltype(z), const Tensor<float>>);
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.to_vector() == std::vector<float>(6, 0.0f));
  CHECK_FALSE(z.requires_grad());
  const auto o = ones<double>({4}, /*requires_grad=*/true);
  CHECK(o.to_vector() == std::vector<double>(4, 1.0));
  CHECK(o.requires_grad());
  CHECK(full({2}, 2.5).to_vector() == std::vector<float>{2.5f, 2.5f});
}

TEST_CASE("arange(end) and arange(start, end, step) walk as torch.arange", "[factories]") {
  CHECK(arange(5).to_vector() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(arange(0).numel() == 0);
  CHECK(arange<double>(1, 2, 0.25).to_vector() == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(arange(5, 0, -2).to_vector() == std::vector<float>{5, 3, 1});
  CHECK(Tensor<double>::arange(3).to_vector() == std::vector<double>{0, 1, 2});
  CHECK_THROWS_WITH(arange(-1), Catch::Contains("arange") && Catch::Contains("[0, -1)"));
}

TEST_CASE("rand and randn draw from the generator as uniform and normal do", "[factories]") {
  Generator a(7), b(7);
  const auto r = rand({3, 4}, a);
  CHECK(r.to_vector() == Tensor<float>::uniform({3, 4}, 0.0f, 1.0f, b).to_vector());
  for (float v : r.to_vector()) CHECK((v >= 0.0f && v < 1.0f));
  const auto n = randn<double>({5}, a, /*requires_grad=*/true);
  CHECK(n.to_vector() == Tensor<double>::normal({5}, 0.0, 1.0, b).to_vector());
  CHECK(n.requires_grad());
  // A seed reproduces them.
  Generator c(1), d(1);
  CHECK(randn({8}, c).to_vector() == randn({8}, d).to_vector());
}
