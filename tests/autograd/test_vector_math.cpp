// The vectorized math kernels of vector_math.hpp at the edges of their domain.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <type_traits>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/vector_math.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;

// The float conversion and the shift inside fast_exp were undefined for NaN (NaN -> int32, then a
// negative value shifted); the sanitizer stage of .ci/run (float-cast-overflow, shift) catches a relapse.
TEST_CASE("fast_exp: NaN in gives NaN out, infinities and huge inputs saturate", "[softmax]") {
  using tapegrad::detail::fast_exp;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(fast_exp(nan)));
  CHECK(std::isnan(fast_exp(-nan)));
  CHECK(fast_exp(inf) == inf);
  CHECK(fast_exp(-inf) == 0.0f);
  CHECK(fast_exp(1e30f) == inf);
  CHECK(fast_exp(std::numeric_limits<float>::max()) == inf);
  CHECK(fast_exp(-1e30f) == 0.0f);
  CHECK(fast_exp(-std::numeric_limits<float>::max()) == 0.0f);
  CHECK(fast_exp(0.0f) == 1.0f);
  for (float x : {-86.9f, -50.0f, -1.0f, 0.5f, 10.0f, 87.9f}) {
    INFO(x);
    CHECK(std::abs(fast_exp(x) - std::exp(x)) <= 4e-7f * std::exp(x));
  }
  // What reaches it in practice: a softmax row holding a NaN is NaN, the other rows are unaffected.
  const auto x = Tensor<float>::from_vector({1.0f, nan, 2.0f, 0.0f, 1.0f, 2.0f}, {2, 3});
  const auto y = softmax(x, -1).data();
  for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(y(0, j)));
  CHECK(y(1, 2) == Approx(0.66524096).epsilon(1e-6));
}
