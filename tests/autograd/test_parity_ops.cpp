// The core ops and losses against torch 1.13: outputs and the gradients of every input for a fixed random
// upstream gradient, in float and double, read from tests/fixtures/ops.safetensors (written by
// tests/fixtures/make_op_fixtures.py, which documents the file's layout; torch is not needed here).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tests/parity.hpp"

using namespace tapegrad;
using tapegrad::testing::dtype_tag;
using tapegrad::testing::mismatch;

namespace {

const io::safetensors::File& fixture() {
  static const io::safetensors::File file(std::string(TAPEGRAD_TEST_FIXTURES_DIR) + "/ops.safetensors");
  return file;
}

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

// Every case of the fixture file, as tapegrad calls; each mirrors the torch call of the same name in
// make_op_fixtures.py.
template <typename T>
std::vector<std::pair<std::string, Op<T>>> cases() {
  const auto mm = [](const Args<T>& a) { return matmul(a.in("a"), a.in("b")); };
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
  const auto vnorm = [](double p, std::vector<std::int64_t> dims, bool keepdim = false) {
    return [=](const Args<T>& a) { return norm(a.in("x"), p, dims, keepdim); };
  };
  const auto padded = [](std::vector<std::int64_t> pads, double value = 0) {
    return [=](const Args<T>& a) { return pad(a.in("x"), pads, value); };
  };
  const auto repeated = [](std::vector<std::int64_t> repeats) {
    return [=](const Args<T>& a) { return repeat(a.in("x"), repeats); };
  };
  const auto cos_sim = [](std::int64_t dim = 1, double eps = 1e-8) {
    return [=](const Args<T>& a) { return cosine_similarity(a.in("x1"), a.in("x2"), dim, eps); };
  };
  const auto smooth_l1 = [](Reduction reduction, double beta = 1.0) {
    return [=](const Args<T>& a) { return smooth_l1_loss(a.in("x"), a.in("target"), reduction, beta); };
  };
  const auto huber = [](Reduction reduction, double delta = 1.0) {
    return [=](const Args<T>& a) { return huber_loss(a.in("x"), a.in("target"), reduction, delta); };
  };
  const auto kl = [](Reduction reduction, bool log_target = false) {
    return [=](const Args<T>& a) { return kl_div(a.in("x"), a.in("target"), reduction, log_target); };
  };
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {
      {"matmul_2d", mm},
      {"matmul_batched_broadcast", mm},
      {"matmul_1d_1d", mm},
      {"matmul_1d_2d", mm},
      {"matmul_2d_1d", mm},
      {"matmul_1d_batched", mm},
      {"matmul_batched_1d", mm},
      {"linear", [](const Args<T>& a) { return linear(a.in("x"), a.in("weight"), a.in("bias")); }},
      {"softmax_last", [](const Args<T>& a) { return softmax(a.in("x"), -1); }},
      {"softmax_dim1", [](const Args<T>& a) { return softmax(a.in("x"), 1); }},
      {"log_softmax_last", [](const Args<T>& a) { return log_softmax(a.in("x"), -1); }},
      {"log_softmax_dim1", [](const Args<T>& a) { return log_softmax(a.in("x"), 1); }},
      {"softmax_scale30", [](const Args<T>& a) { return softmax(a.in("x"), -1); }},
      {"log_softmax_scale30", [](const Args<T>& a) { return log_softmax(a.in("x"), -1); }},
      {"log_softmax_scale30_offset", [](const Args<T>& a) { return log_softmax(a.in("x"), -1); }},
      {"layer_norm_last", [](const Args<T>& a) { return layer_norm(a.in("x"), {6}, a.in("weight"), a.in("bias")); }},
      {"layer_norm_last2",
       [](const Args<T>& a) {
         return layer_norm(a.in("x"), {3, 4}, a.in("weight"), a.in("bias"));
       }},
      {"layer_norm_offset", [](const Args<T>& a) { return layer_norm(a.in("x"), {8}, a.in("weight"), a.in("bias")); }},
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
      {"gelu", [](const Args<T>& a) { return gelu(a.in("x")); }},
      {"gelu_tanh", [](const Args<T>& a) { return gelu(a.in("x"), GeluApproximate::Tanh); }},
      {"embedding_padding", [](const Args<T>& a) { return embedding(a.in("weight"), a.index("ids"), 2); }},
      {"embedding_padding_negative", [](const Args<T>& a) { return embedding(a.in("weight"), a.index("ids"), -1); }},
      {"masked_softmax_causal", masked_softmax},
      {"masked_softmax_padding", masked_softmax},
      {"var_dim1", [](const Args<T>& a) { return var(a.in("x"), {1}); }},
      {"var_dims02_biased_keepdim",
       [](const Args<T>& a) {
         return var(a.in("x"), {0, 2}, 0, true);
       }},
      {"max_dim1", [](const Args<T>& a) { return max(a.in("x"), 1).values; }},
      {"max_dim0_keepdim", [](const Args<T>& a) { return max(a.in("x"), 0, true).values; }},
      {"sum_dim1_keepdim", [](const Args<T>& a) { return sum(a.in("x"), {1}, true); }},
      {"sum_dims02",
       [](const Args<T>& a) {
         return sum(a.in("x"), {0, 2});
       }},
      {"sum_all", [](const Args<T>& a) { return sum(a.in("x")); }},
      {"mean_dims02_keepdim",
       [](const Args<T>& a) {
         return mean(a.in("x"), {0, 2}, true);
       }},
      {"mean_dim_neg1", [](const Args<T>& a) { return mean(a.in("x"), {-1}); }},
      {"mean_all", [](const Args<T>& a) { return mean(a.in("x")); }},
      {"mse_loss_mean", [](const Args<T>& a) { return mse_loss(a.in("x"), a.in("target")); }},
      {"mse_loss_sum", [](const Args<T>& a) { return mse_loss(a.in("x"), a.in("target"), Reduction::Sum); }},
      {"mse_loss_none", [](const Args<T>& a) { return mse_loss(a.in("x"), a.in("target"), Reduction::None); }},
      {"mse_loss_broadcast_mean", [](const Args<T>& a) { return mse_loss(a.in("x"), a.in("target")); }},
      {"l1_loss_mean", [](const Args<T>& a) { return l1_loss(a.in("x"), a.in("target")); }},
      {"l1_loss_sum", [](const Args<T>& a) { return l1_loss(a.in("x"), a.in("target"), Reduction::Sum); }},
      {"l1_loss_none_broadcast", [](const Args<T>& a) { return l1_loss(a.in("x"), a.in("target"), Reduction::None); }},
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
      {"abs", [](const Args<T>& a) { return abs(a.in("x")); }},
      {"log1p", [](const Args<T>& a) { return log1p(a.in("x")); }},
      {"sin", [](const Args<T>& a) { return sin(a.in("x")); }},
      {"cos", [](const Args<T>& a) { return cos(a.in("x")); }},
      {"silu", [](const Args<T>& a) { return silu(a.in("x")); }},
      {"leaky_relu", [](const Args<T>& a) { return leaky_relu(a.in("x")); }},
      {"leaky_relu_slope02", [](const Args<T>& a) { return leaky_relu(a.in("x"), 0.2); }},
      {"clamp_both", [](const Args<T>& a) { return clamp(a.in("x"), -0.5, 0.75); }},
      {"clamp_min_only", [](const Args<T>& a) { return clamp(a.in("x"), 0.0); }},
      {"clamp_max_only", [](const Args<T>& a) { return clamp(a.in("x"), std::nullopt, 0.75); }},
      {"clamp_min_gt_max", [](const Args<T>& a) { return clamp(a.in("x"), 0.5, -0.5); }},
      {"clamp_nan", [](const Args<T>& a) { return clamp(a.in("x"), -0.5, 0.75); }},
      {"minimum_ties", [](const Args<T>& a) { return minimum(a.in("a"), a.in("b")); }},
      {"maximum_ties", [](const Args<T>& a) { return maximum(a.in("a"), a.in("b")); }},
      {"minimum_broadcast_tie", [](const Args<T>& a) { return minimum(a.in("a"), a.in("b")); }},
      {"maximum_broadcast_tie", [](const Args<T>& a) { return maximum(a.in("a"), a.in("b")); }},
      {"minimum_nan", [](const Args<T>& a) { return minimum(a.in("a"), a.in("b")); }},
      {"maximum_nan", [](const Args<T>& a) { return maximum(a.in("a"), a.in("b")); }},
      {"min_dim1_ties", [](const Args<T>& a) { return min(a.in("x"), 1).values; }},
      {"min_dim0_keepdim_ties", [](const Args<T>& a) { return min(a.in("x"), 0, true).values; }},
      {"min_dim_neg1_nan", [](const Args<T>& a) { return min(a.in("x"), -1).values; }},
      {"logsumexp_dim1", [](const Args<T>& a) { return logsumexp(a.in("x"), 1); }},
      {"logsumexp_dim_neg1_keepdim_offset", [](const Args<T>& a) { return logsumexp(a.in("x"), -1, true); }},
      {"logsumexp_dims02",
       [](const Args<T>& a) {
         return logsumexp(a.in("x"), {0, 2});
       }},
      {"logsumexp_inf_rows", [](const Args<T>& a) { return logsumexp(a.in("x"), -1); }},
      {"logsumexp_inf_column_dim0", [](const Args<T>& a) { return logsumexp(a.in("x"), 0); }},
      {"gather_dim1_repeated", [](const Args<T>& a) { return gather(a.in("x"), 1, a.index("index")); }},
      {"gather_dim0_smaller", [](const Args<T>& a) { return gather(a.in("x"), 0, a.index("index")); }},
      {"gather_dim_neg1_3d", [](const Args<T>& a) { return gather(a.in("x"), -1, a.index("index")); }},
      {"index_select_dim0_repeated", [](const Args<T>& a) { return index_select(a.in("x"), 0, a.index("index")); }},
      {"index_select_dim_neg1", [](const Args<T>& a) { return index_select(a.in("x"), -1, a.index("index")); }},
      {"index_select_dim1_3d", [](const Args<T>& a) { return index_select(a.in("x"), 1, a.index("index")); }},
      {"tril", [](const Args<T>& a) { return tril(a.in("x")); }},
      {"tril_diag1_batched_wide", [](const Args<T>& a) { return tril(a.in("x"), 1); }},
      {"tril_diag_neg2_tall", [](const Args<T>& a) { return tril(a.in("x"), -2); }},
      {"triu", [](const Args<T>& a) { return triu(a.in("x")); }},
      {"triu_diag2_batched", [](const Args<T>& a) { return triu(a.in("x"), 2); }},
      {"triu_diag_neg1_batched_tall", [](const Args<T>& a) { return triu(a.in("x"), -1); }},
      {"cumsum_dim1", [](const Args<T>& a) { return cumsum(a.in("x"), 1); }},
      {"cumsum_dim_neg1_zeros", [](const Args<T>& a) { return cumsum(a.in("x"), -1); }},
      {"cumsum_dim0", [](const Args<T>& a) { return cumsum(a.in("x"), 0); }},
      {"cumsum_0d", [](const Args<T>& a) { return cumsum(a.in("x"), 0); }},
      {"softplus", [](const Args<T>& a) { return softplus(a.in("x")); }},
      {"softplus_beta2_threshold5", [](const Args<T>& a) { return softplus(a.in("x"), 2, 5); }},
      {"softplus_beta05", [](const Args<T>& a) { return softplus(a.in("x"), 0.5); }},
      {"elu", [](const Args<T>& a) { return elu(a.in("x")); }},
      {"elu_alpha05_zeros", [](const Args<T>& a) { return elu(a.in("x"), 0.5); }},
      {"std_dim1", [](const Args<T>& a) { return tapegrad::std(a.in("x"), 1); }},
      {"std_dims02_biased_keepdim",
       [](const Args<T>& a) {
         return tapegrad::std(a.in("x"), {0, 2}, 0, true);
       }},
      {"std_all", [](const Args<T>& a) { return tapegrad::std(a.in("x"), std::vector<std::int64_t>{}); }},
      {"std_constant_row", [](const Args<T>& a) { return a.in("x").std(-1); }},
      {"norm_all", [](const Args<T>& a) { return norm(a.in("x")); }},
      {"norm_p2_dim1_zero_row", vnorm(2, {1})},
      {"norm_p1_dim_neg1_zeros", vnorm(1, {-1})},
      {"norm_inf_ties_zero_row", vnorm(inf, {1}, true)},
      {"norm_p3_dim0_zero_col", vnorm(3, {0})},
      {"norm_p05_zeros", vnorm(0.5, {0})},
      {"norm_p15_zero_row", vnorm(1.5, {1})},
      {"norm_p0_count", vnorm(0, {0})},
      {"norm_p2_dims02", vnorm(2, {0, 2})},
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
      {"pad_last", padded({1, 2})},
      {"pad_2d_value", padded({1, 0, 2, 1}, 0.5)},
      {"pad_negative_crop", padded({-1, 2, 0, -1})},
      {"pad_no_pads", padded({})},
      {"pad_crop_to_zero", padded({0, -3})},
      {"pad_3d_all", padded({1, 1, 0, 2, 1, 0}, -1.5)},
      {"repeat_lead_dims", repeated({2, 1, 2})},
      {"repeat_ones", repeated({1, 1})},
      {"repeat_zero", repeated({2, 0})},
      {"repeat_3d", [](const Args<T>& a) { return a.in("x").repeat(1, 4, 2); }},
      {"normalize_zero_row", [](const Args<T>& a) { return normalize(a.in("x")); }},
      {"normalize_p1_dim0", [](const Args<T>& a) { return normalize(a.in("x"), 1, 0); }},
      {"normalize_eps_clamped", [](const Args<T>& a) { return normalize(a.in("x"), 2, 1, 0.1); }},
      {"normalize_inf_dim_neg1", [=](const Args<T>& a) { return normalize(a.in("x"), inf, -1); }},
      {"cosine_similarity", cos_sim()},
      {"cosine_similarity_tiny_zero_rows", cos_sim()},
      {"cosine_similarity_broadcast_neg1", cos_sim(-1)},
      {"cosine_similarity_dim0_eps", cos_sim(0, 0.5)},
      {"smooth_l1_loss_mean", smooth_l1(Reduction::Mean)},
      {"smooth_l1_loss_beta05_none", smooth_l1(Reduction::None, 0.5)},
      {"smooth_l1_loss_beta0_sum", smooth_l1(Reduction::Sum, 0.0)},
      {"smooth_l1_loss_broadcast_mean", smooth_l1(Reduction::Mean)},
      {"huber_loss_mean", huber(Reduction::Mean)},
      {"huber_loss_delta2_none", huber(Reduction::None, 2.0)},
      {"huber_loss_delta05_sum", huber(Reduction::Sum, 0.5)},
      {"kl_div_mean", kl(Reduction::Mean)},
      {"kl_div_batchmean", kl(Reduction::BatchMean)},
      {"kl_div_sum", kl(Reduction::Sum)},
      {"kl_div_log_target_batchmean", kl(Reduction::BatchMean, true)},
      {"kl_div_log_target_none", kl(Reduction::None, true)},
      {"kl_div_broadcast_batchmean", kl(Reduction::BatchMean)},
      {"kl_div_target_zeros_none", kl(Reduction::None)},
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

TEST_CASE("the parity table covers every case of ops.safetensors in both dtypes", "[parity]") {
  // <case>.<dtype>.<role>...: the case is everything before the dtype tag.
  std::map<std::string, std::set<std::string>> in_file;
  for (const auto& name : fixture().names()) {
    for (const std::string tag : {".f32.", ".f64."}) {
      const auto at = name.find(tag);
      if (at != std::string::npos) in_file[name.substr(0, at)].insert(tag);
    }
  }
  std::set<std::string> in_table;
  for (const auto& entry : cases<double>()) in_table.insert(entry.first);
  std::set<std::string> file_cases;
  for (const auto& [name, tags] : in_file) {
    file_cases.insert(name);
    INFO(name);
    CHECK(tags.size() == 2);
  }
  CHECK(file_cases == in_table);
  CHECK(cases<float>().size() == in_table.size());
}
