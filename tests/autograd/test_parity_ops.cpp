// The cases of tests/fixtures/ops.safetensors that take more than their differentiable inputs (indices,
// masks, constant weights) or return more than a tensor (topk's and sort's indices): outputs and the
// gradients of every input for a fixed random upstream gradient, in float and double, against torch 1.13
// (the file is written by tests/fixtures/make_op_fixtures.py, which documents its layout). The other
// cases are the op registry's (tests/autograd/op_registry.cpp), checked in test_op_registry.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tests/autograd/op_registry.hpp"
#include "tests/parity.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

const io::safetensors::File& fixture() { return testing::fixture_file("ops.safetensors"); }

// One case in one dtype: its differentiable inputs as fresh leaves that require grad, and its other
// arguments, looked up by the names of the fixture script.
template <typename T>
class Args : public testing::CaseInputs<T> {
 public:
  explicit Args(std::string prefix) : testing::CaseInputs<T>(fixture(), std::move(prefix)) {}
  IndexArray index(const std::string& name) const {
    return this->file_.template get<std::int64_t>(this->prefix_ + ".arg." + name);
  }
  BoolArray mask(const std::string& name) const {
    return this->file_.template get<bool>(this->prefix_ + ".arg." + name);
  }
  /// torch's int64 indices beside the values of topk and sort.
  IndexArray torch_indices() const { return this->file_.template get<std::int64_t>(this->prefix_ + ".indices"); }
  /// A float argument that gets no gradient (a loss weight, a constant target).
  Tensor<T> constant(const std::string& name) const {
    return Tensor<T>(this->file_.template get<T>(this->prefix_ + ".arg." + name));
  }
};

template <typename T>
using Op = std::function<Tensor<T>(const Args<T>&)>;

CrossEntropyOptions ce(Reduction reduction, std::int64_t ignore_index = -100, double label_smoothing = 0.0) {
  CrossEntropyOptions options;
  options.reduction = reduction;
  options.ignore_index = ignore_index;
  options.label_smoothing = label_smoothing;
  return options;
}

// The cases not in the op registry, as tapegrad calls; each mirrors the torch call of the same name in
// make_op_fixtures.py.
template <typename T>
std::vector<std::pair<std::string, Op<T>>> cases() {
  const auto masked_softmax = [](const Args<T>& a) {
    return softmax(masked_fill(a.in("x"), a.mask("mask"), -std::numeric_limits<T>::infinity()), -1);
  };
  const auto entropy = [](Reduction reduction, std::int64_t ignore_index = -100, double smoothing = 0.0) {
    return [options = ce(reduction, ignore_index, smoothing)](const Args<T>& a) {
      return cross_entropy(a.in("x"), a.index("target"), options);
    };
  };
  // binary_cross_entropy(_with_logits) of inputs x and target, with the named constant weights.
  const auto bce = [](Reduction reduction, std::string weight = "") {
    return [=](const Args<T>& a) {
      BinaryCrossEntropyOptions<T> o;
      o.reduction = reduction;
      if (!weight.empty()) o.weight = a.constant(weight);
      return binary_cross_entropy(a.in("x"), a.in("target"), o);
    };
  };
  const auto bce_logits = [](Reduction reduction, std::string weight = "", std::string pos_weight = "") {
    return [=](const Args<T>& a) {
      BinaryCrossEntropyWithLogitsOptions<T> o;
      o.reduction = reduction;
      if (!weight.empty()) o.weight = a.constant(weight);
      if (!pos_weight.empty()) o.pos_weight = a.constant(pos_weight);
      return binary_cross_entropy_with_logits(a.in("x"), a.in("target"), o);
    };
  };
  // topk and sort: the indices must equal torch's; the values go on to the output's comparison.
  const auto picked = [](const Args<T>& a, const ValuesIndices<T>& r) {
    const IndexArray want = a.torch_indices();
    INFO("indices differ from torch's");
    CHECK(r.indices == want);
    return r.values;
  };
  const auto top = [picked](std::int64_t k, std::int64_t dim = -1, bool largest = true) {
    return [=](const Args<T>& a) { return picked(a, topk(a.in("x"), k, dim, largest)); };
  };
  const auto sorted = [picked](std::int64_t dim, bool descending) {
    return [=](const Args<T>& a) { return picked(a, sort(a.in("x"), dim, descending)); };
  };
  return {
      {"cross_entropy_mean", entropy(Reduction::Mean)},
      {"cross_entropy_sum", entropy(Reduction::Sum)},
      {"cross_entropy_none", entropy(Reduction::None)},
      {"cross_entropy_ignore_mean", entropy(Reduction::Mean)},
      {"cross_entropy_ignore2_none", entropy(Reduction::None, 2)},
      {"cross_entropy_smooth_mean", entropy(Reduction::Mean, -100, 0.1)},
      {"cross_entropy_smooth_sum", entropy(Reduction::Sum, -100, 0.1)},
      {"cross_entropy_smooth_ignore_mean", entropy(Reduction::Mean, -100, 0.1)},
      {"cross_entropy_smooth_ignore_sum", entropy(Reduction::Sum, -100, 0.1)},
      {"cross_entropy_smooth_ignore_none", entropy(Reduction::None, -100, 0.1)},
      {"cross_entropy_unbatched", entropy(Reduction::Mean)},
      {"cross_entropy_scale30", entropy(Reduction::Mean)},
      {"cross_entropy_smooth_scale30", entropy(Reduction::Mean, -100, 0.1)},
      {"cross_entropy_confident_offset_none", entropy(Reduction::None)},
      {"nll_loss_mean", [](const Args<T>& a) { return nll_loss(a.in("x"), a.index("target")); }},
      {"nll_loss_sum", [](const Args<T>& a) { return nll_loss(a.in("x"), a.index("target"), Reduction::Sum); }},
      {"nll_loss_ignore_none",
       [](const Args<T>& a) { return nll_loss(a.in("x"), a.index("target"), Reduction::None); }},
      {"nll_loss_ignore_mean", [](const Args<T>& a) { return nll_loss(a.in("x"), a.index("target")); }},
      {"embedding_padding", [](const Args<T>& a) { return embedding(a.in("weight"), a.index("ids"), 2); }},
      {"embedding_padding_negative", [](const Args<T>& a) { return embedding(a.in("weight"), a.index("ids"), -1); }},
      {"masked_softmax_causal", masked_softmax},
      {"masked_softmax_padding", masked_softmax},
      {"bce_mean", bce(Reduction::Mean)},
      {"bce_sum", bce(Reduction::Sum)},
      {"bce_none", bce(Reduction::None)},
      {"bce_weight_mean", bce(Reduction::Mean, "weight")},
      {"bce_weight_none", bce(Reduction::None, "weight")},
      {"bce_clamped_log_none",
       [](const Args<T>& a) {
         BinaryCrossEntropyOptions<T> o;
         o.reduction = Reduction::None;
         return binary_cross_entropy(a.in("x"), a.constant("target"), o);
       }},
      {"bce_clamped_log_sum",
       [](const Args<T>& a) {
         BinaryCrossEntropyOptions<T> o;
         o.reduction = Reduction::Sum;
         return binary_cross_entropy(a.in("x"), a.constant("target"), o);
       }},
      {"bce_logits_mean", bce_logits(Reduction::Mean)},
      {"bce_logits_sum", bce_logits(Reduction::Sum)},
      {"bce_logits_none", bce_logits(Reduction::None)},
      {"bce_logits_pos_weight_mean", bce_logits(Reduction::Mean, "", "pos_weight")},
      {"bce_logits_weight_pos_weight_sum", bce_logits(Reduction::Sum, "weight", "pos_weight")},
      {"bce_logits_pos_weight_none", bce_logits(Reduction::None, "", "pos_weight")},
      {"bce_logits_large_none", bce_logits(Reduction::None, "", "pos_weight")},
      {"gather_dim1_repeated", [](const Args<T>& a) { return gather(a.in("x"), 1, a.index("index")); }},
      {"gather_dim0_smaller", [](const Args<T>& a) { return gather(a.in("x"), 0, a.index("index")); }},
      {"gather_dim_neg1_3d", [](const Args<T>& a) { return gather(a.in("x"), -1, a.index("index")); }},
      {"index_select_dim0_repeated", [](const Args<T>& a) { return index_select(a.in("x"), 0, a.index("index")); }},
      {"index_select_dim_neg1", [](const Args<T>& a) { return index_select(a.in("x"), -1, a.index("index")); }},
      {"index_select_dim1_3d", [](const Args<T>& a) { return index_select(a.in("x"), 1, a.index("index")); }},
      {"topk_k2_last", top(2)},
      {"topk_smallest_dim0", top(3, 0, false)},
      {"topk_k_eq_size", top(6)},
      {"topk_ties_not_picked", top(3)},
      {"topk_k0", top(0)},
      {"topk_nan", top(2)},
      {"sort_last", sorted(-1, false)},
      {"sort_descending_dim0", sorted(0, true)},
      {"sort_ties", sorted(-1, false)},
      {"sort_ties_descending", sorted(-1, true)},
      {"sort_nan_descending", sorted(1, true)},
  };
}

// Runs one case: the output, then backward from the recorded upstream gradient and every input's grad.
template <typename T>
void check_against_torch(const std::string& name, const Op<T>& op) {
  const std::string prefix = name + "." + dtype_tag<T>();
  const Args<T> args(prefix);
  REQUIRE_FALSE(args.inputs().empty());
  const auto expect = [&prefix](const xt::xarray<T>& got, const std::string& key) {
    const std::string problem = mismatch(got, fixture().get<T>(prefix + key));
    INFO(prefix << key << ": " << problem);
    CHECK(problem.empty());
  };
  const Tensor<T> out = op(args);
  expect(out.data(), ".out");
  out.backward(fixture().get<T>(prefix + ".gout"));
  for (const auto& [input, tensor] : args.inputs()) {
    INFO("gradient of " << input);
    REQUIRE(tensor.has_grad());
    expect(tensor.grad(), ".grad." + input);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("core ops match torch 1.13 outputs and gradients", "[parity]", float, double) {
  for (const auto& [name, op] : cases<TestType>()) {
    DYNAMIC_SECTION(name) { check_against_torch<TestType>(name, op); }
  }
}

TEST_CASE("the parity table and the op registry cover every case of ops.safetensors in both dtypes, once", "[parity]") {
  // <case>.<dtype>.<role>...: the case is everything before the dtype tag.
  std::vector<std::string> in_table = testing::case_names(cases<double>());
  for (const auto& op : testing::op_registry()) in_table.insert(in_table.end(), op.fixtures.begin(), op.fixtures.end());
  CHECK(testing::coverage_problems(testing::fixture_cases(fixture(), ".", /*at_end=*/false), in_table) == "");
  CHECK(cases<float>().size() == cases<double>().size());
}
