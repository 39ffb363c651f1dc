// The recipe of docs/design.md ("Writing an op") compiled as written: the block between the markers
// below is a verbatim copy of the docs' first code block (the first test checks that it still is), and
// the ops it defines pass gradcheck in double, so the documented way of writing an op cannot rot.
// [design.md: Writing an op]
#include <cmath>

#include "tapegrad/autograd/autograd.hpp"

namespace my_ops {
using namespace tapegrad;

/// exp(x); its backward reads the saved output: d exp(x) / dx = exp(x).
template <typename T>
Tensor<T> my_exp(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::exp(v); }));
  if (should_record(x))
    record(out, "my_exp", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return gv * yv; }));
    });
  return out;
}

/// sqrt(a^2 + b^2) with a and b broadcast as in torch; d/da = a / out and d/db = b / out, computed
/// over the broadcast shape and summed back to each operand's own shape by unbroadcast.
template <typename T>
Tensor<T> my_hypot(const Tensor<T>& a, const Tensor<T>& b) {
  Tensor<T> out(broadcast_apply("my_hypot", a.data(), b.data(), [](T x, T y) { return std::hypot(x, y); }));
  if (should_record(a, b))
    record(out, "my_hypot", {a, b},
           [a_val = a.saved(), b_val = b.saved(), r = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
             const xt::xarray<T> g_over_r = zip(g, *r, [](T gv, T rv) { return gv / rv; });
             const auto times = [](T u, T v) { return u * v; };
             if (in.needs(0))
               in.accumulate(0, unbroadcast(broadcast_apply("my_hypot", g_over_r, *a_val, times), shape_of(*a_val)));
             if (in.needs(1))
               in.accumulate(1, unbroadcast(broadcast_apply("my_hypot", g_over_r, *b_val, times), shape_of(*b_val)));
           });
  return out;
}

}  // namespace my_ops
// [end]

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::rand_input;
using Inputs = std::vector<Tensor<double>>;

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// The text of the `nth` ```cpp block after `heading` in a Markdown file.
std::string code_block(const std::string& markdown, const std::string& heading, int nth) {
  std::size_t at = markdown.find(heading);
  REQUIRE(at != std::string::npos);
  std::string block;
  for (int i = 0; i <= nth; ++i) {
    at = markdown.find("```cpp\n", at);
    REQUIRE(at != std::string::npos);
    at += 7;
    const std::size_t end = markdown.find("```\n", at);
    REQUIRE(end != std::string::npos);
    block = markdown.substr(at, end - at);
    at = end + 4;
  }
  return block;
}
// s without the indentation of its lines, so that a block can be found at any depth.
std::string unindented(const std::string& s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && c == ' ') continue;
    out += c;
    line_start = c == '\n';
  }
  return out;
}
const std::string kSourceDir = TAPEGRAD_TEST_FIXTURES_DIR "/../..";
}  // namespace

TEST_CASE("docs/design.md's op recipe is the code this file compiles", "[docs][custom_op]") {
  const std::string docs = read(kSourceDir + "/docs/design.md");
  const std::string self = read(kSourceDir + "/tests/autograd/test_custom_op.cpp");
  const std::string recipe = code_block(docs, "## Writing an op", 0);
  CHECK(self.find("// [design.md: Writing an op]\n" + recipe + "// [end]\n") != std::string::npos);
  const std::string usage = code_block(docs, "## Writing an op", 1);
  CHECK(unindented(self).find(unindented(usage)) != std::string::npos);
}

TEST_CASE("a custom op written as the docs say passes gradcheck", "[docs][custom_op]") {
  // The docs' second block, verbatim (indented here):
  {
    auto x = tapegrad::Tensor<double>::from_vector({0.5, -1.0, 2.0}, {3}, /*requires_grad=*/true);
    auto check = tapegrad::gradcheck([](const auto& in) { return my_ops::my_exp(in[0]); }, {x});
    // check.ok, or check.message names the element whose gradients differ
    INFO(check.message);
    CHECK(check.ok);
  }
  CHECK_GRADCHECK([](const Inputs& in) { return my_ops::my_exp(in[0]); }, (Inputs{rand_input({2, 3}, 1)}));
  // Broadcasting both ways: [2, 1, 3] with [4, 1] gives [2, 4, 3], and each gradient is summed back.
  CHECK_GRADCHECK([](const Inputs& in) { return my_ops::my_hypot(in[0], in[1]); },
                  (Inputs{rand_input({2, 1, 3}, 2, 0.5, 2.0), rand_input({4, 1}, 3, 0.5, 2.0)}));
  CHECK_GRADCHECK([](const Inputs& in) { return my_ops::my_hypot(in[0], in[1]); },
                  (Inputs{rand_input({3}, 4, 0.5, 2.0), rand_input({}, 5, -2.0, -0.5)}));
}

TEST_CASE("a custom op behaves as a built-in one: values, node, float, no recording without grad",
          "[docs][custom_op]") {
  const auto x = Tensor<double>::from_vector({0.0, 1.0, -2.0}, {3}, true);
  const auto y = my_ops::my_exp(x);
  CHECK(y.to_vector() == exp(x).to_vector());
  CHECK(y.grad_fn_name() == "my_exp");
  const auto a = Tensor<float>::from_vector({3.0f, 5.0f}, {2, 1});
  const auto b = Tensor<float>::from_vector({4.0f, 12.0f}, {2});
  const auto h = my_ops::my_hypot(a, b);
  CHECK(h.shape() == Shape{2, 2});
  CHECK(h.to_vector() == std::vector<float>{5.0f, std::hypot(3.0f, 12.0f), std::hypot(5.0f, 4.0f), 13.0f});
  CHECK(h.is_leaf());  // nothing required grad: no node
  {
    NoGradGuard no_grad;
    CHECK(my_ops::my_exp(x).is_leaf());
  }
  CHECK_THROWS_WITH(my_ops::my_hypot(Tensor<double>::zeros({2}), Tensor<double>::zeros({3})),
                    Catch::Contains("my_hypot"));
  CHECK_THROWS_WITH(zip(xt::xarray<double>::from_shape({2}), xt::xarray<double>::from_shape({3}),
                        [](double u, double v) { return u + v; }),
                    "zip: shapes [2] and [3] differ (use broadcast_apply to broadcast)");
}
