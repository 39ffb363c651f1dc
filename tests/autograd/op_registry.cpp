// The entries of the op table. An entry's inputs are named and shaped as the fixture script's case
// (tests/fixtures/make_op_fixtures.py), so that one entry drives both gradcheck and torch parity.
#include "tests/autograd/op_registry.hpp"

#include <limits>
#include <optional>
#include <stdexcept>

#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/ops.hpp"

namespace tapegrad::testing {
namespace {

using In = std::vector<OpInput>;
constexpr double inf = std::numeric_limits<double>::infinity();

// The one-input entries: x of the given shape in [low, high).
In x(Shape shape, double low = -1.0, double high = 1.0) { return {{"x", std::move(shape), low, high}}; }
// Two same-range inputs.
In two(const char* a, Shape sa, const char* b, Shape sb, double low = -1.0, double high = 1.0) {
  return {{a, std::move(sa), low, high}, {b, std::move(sb), low, high}};
}

// A unary op's further gradcheck samples: 0-d, 1-d, 2-d and 3-d.
std::vector<std::vector<Shape>> ranks() { return {{Shape{}}, {Shape{5}}, {Shape{2, 3}}, {Shape{2, 3, 4}}}; }

std::vector<OpInfo> entries() {
  // x and target, for the losses.
  const auto xt = [](Shape sx, Shape st, double tlow = -1.0, double thigh = 1.0) {
    return In{{"x", std::move(sx)}, {"target", std::move(st), tlow, thigh}};
  };
  const Shape ff{64, 256, 128};  // the feed-forward activation of the default model, as the benchmarks
  return {
      // Products.
      {"matmul_2d",
       two("a", {3, 4}, "b", {4, 5}),
       [](const auto& v) { return matmul(v[0], v[1]); },
       [](const auto& v) { return v[0].matmul(v[1]); },
       {"matmul_2d"},
       {{1024, 256}, {256, 256}}},
      {"matmul_batched_broadcast",
       two("a", {2, 1, 3, 4}, "b", {3, 4, 5}),
       [](const auto& v) { return matmul(v[0], v[1]); },
       [](const auto& v) { return v[0].matmul(v[1]); },
       {"matmul_batched_broadcast"}},
      {"matmul_vector",
       two("a", {4}, "b", {2, 4, 3}),
       [](const auto& v) { return matmul(v[0], v[1]); },
       [](const auto& v) { return v[0].matmul(v[1]); },
       {"matmul_1d_1d", "matmul_1d_2d", "matmul_2d_1d", "matmul_1d_batched", "matmul_batched_1d"}},
      {"linear",
       In{{"x", {2, 3, 4}}, {"weight", {5, 4}}, {"bias", {5}}},
       [](const auto& v) { return linear(v[0], v[1], v[2]); },
       {},
       {"linear"}},
      // Softmax.
      {"softmax_last",
       x({3, 5}, -3, 3),
       [](const auto& v) { return softmax(v[0], -1); },
       [](const auto& v) { return v[0].softmax(-1); },
       {"softmax_last", "softmax_scale30"},
       {{64, 4, 256, 256}}},
      {"softmax_dim1",
       x({2, 4, 3}, -3, 3),
       [](const auto& v) { return softmax(v[0], 1); },
       [](const auto& v) { return v[0].softmax(1); },
       {"softmax_dim1"}},
      {"log_softmax_last",
       x({3, 5}, -3, 3),
       [](const auto& v) { return log_softmax(v[0], -1); },
       [](const auto& v) { return v[0].log_softmax(-1); },
       {"log_softmax_last", "log_softmax_scale30", "log_softmax_scale30_offset"},
       {{64, 4, 256, 256}}},
      {"log_softmax_dim1",
       x({2, 4, 3}, -3, 3),
       [](const auto& v) { return log_softmax(v[0], 1); },
       [](const auto& v) { return v[0].log_softmax(1); },
       {"log_softmax_dim1"}},
      // Normalization.
      {"layer_norm_last",
       In{{"x", {2, 3, 6}, -2, 2}, {"weight", {6}}, {"bias", {6}}},
       [](const auto& v) { return layer_norm(v[0], {v[0].shape().back()}, v[1], v[2]); },
       {},
       {"layer_norm_last"},
       {{64, 256, 64}, {64}, {64}}},
      {"layer_norm_last2",
       In{{"x", {2, 3, 4}, -2, 2}, {"weight", {3, 4}}, {"bias", {3, 4}}},
       [](const auto& v) {
         return layer_norm(v[0], {3, 4}, v[1], v[2]);
       },
       {},
       {"layer_norm_last2"}},
      {"layer_norm_offset",
       In{{"x", {3, 8}, 9, 11}, {"weight", {8}}, {"bias", {8}}},
       [](const auto& v) { return layer_norm(v[0], {8}, v[1], v[2]); },
       {},
       {"layer_norm_offset"}},
      // Reductions.
      {"sum_dim1_keepdim",
       x({3, 4, 5}),
       [](const auto& v) { return sum(v[0], {1}, true); },
       [](const auto& v) { return v[0].sum(1, true); },
       {"sum_dim1_keepdim"}},
      {"sum_dims02",
       x({3, 4, 5}),
       [](const auto& v) {
         return sum(v[0], {0, 2});
       },
       [](const auto& v) {
         return v[0].sum({0, 2});
       },
       {"sum_dims02"}},
      {"sum_all",
       x({3, 4}),
       [](const auto& v) { return sum(v[0]); },
       [](const auto& v) { return v[0].sum(); },
       {"sum_all"}},
      {"mean_dims02_keepdim",
       x({3, 4, 5}),
       [](const auto& v) {
         return mean(v[0], {0, 2}, true);
       },
       [](const auto& v) {
         return v[0].mean({0, 2}, true);
       },
       {"mean_dims02_keepdim"}},
      {"mean_dim_neg1",
       x({3, 4, 5}),
       [](const auto& v) { return mean(v[0], {-1}); },
       [](const auto& v) { return v[0].mean(-1); },
       {"mean_dim_neg1"}},
      {"mean_all",
       x({3, 4}),
       [](const auto& v) { return mean(v[0]); },
       [](const auto& v) { return v[0].mean(); },
       {"mean_all"}},
      {"var_dim1",
       x({3, 4, 5}),
       [](const auto& v) { return var(v[0], {1}); },
       [](const auto& v) { return v[0].var(1); },
       {"var_dim1"}},
      {"var_dims02_biased_keepdim",
       x({3, 4, 5}),
       [](const auto& v) {
         return var(v[0], {0, 2}, 0, true);
       },
       [](const auto& v) {
         return v[0].var({0, 2}, 0, true);
       },
       {"var_dims02_biased_keepdim"}},
      {"std_dim1",
       x({3, 4, 5}),
       [](const auto& v) { return tapegrad::std(v[0], 1); },
       [](const auto& v) { return v[0].std(1); },
       {"std_dim1"}},
      {"std_dims02_biased_keepdim",
       x({3, 4, 5}),
       [](const auto& v) {
         return tapegrad::std(v[0], {0, 2}, 0, true);
       },
       [](const auto& v) {
         return v[0].std({0, 2}, 0, true);
       },
       {"std_dims02_biased_keepdim"}},
      {"std_all",
       x({3, 4}),
       [](const auto& v) { return tapegrad::std(v[0], std::vector<std::int64_t>{}); },
       [](const auto& v) { return v[0].std(std::vector<std::int64_t>{}); },
       {"std_all"}},
      {"std_last",
       x({3, 5}),
       [](const auto& v) { return tapegrad::std(v[0], -1); },
       [](const auto& v) { return v[0].std(-1); },
       {"std_constant_row"}},
      {"max_dim1",
       x({3, 5}),
       [](const auto& v) { return max(v[0], 1).values; },
       [](const auto& v) { return v[0].max(1).values; },
       {"max_dim1"}},
      {"max_dim0_keepdim",
       x({4, 3, 2}),
       [](const auto& v) { return max(v[0], 0, true).values; },
       [](const auto& v) { return v[0].max(0, true).values; },
       {"max_dim0_keepdim"}},
      {"min_dim1",
       x({3, 5}),
       [](const auto& v) { return min(v[0], 1).values; },
       [](const auto& v) { return v[0].min(1).values; },
       {"min_dim1_ties"}},
      {"min_dim0_keepdim",
       x({4, 3, 2}),
       [](const auto& v) { return min(v[0], 0, true).values; },
       [](const auto& v) { return v[0].min(0, true).values; },
       {"min_dim0_keepdim_ties"}},
      {"min_dim_neg1",
       x({3, 4}),
       [](const auto& v) { return min(v[0], -1).values; },
       [](const auto& v) { return v[0].min(-1).values; },
       {"min_dim_neg1_nan"}},
      {"logsumexp_dim1",
       x({3, 4, 5}, -3, 3),
       [](const auto& v) { return logsumexp(v[0], 1); },
       [](const auto& v) { return v[0].logsumexp(1); },
       {"logsumexp_dim1"}},
      {"logsumexp_last_keepdim",
       x({4, 6}, -3, 3),
       [](const auto& v) { return logsumexp(v[0], -1, true); },
       [](const auto& v) { return v[0].logsumexp(-1, true); },
       {"logsumexp_dim_neg1_keepdim_offset"}},
      {"logsumexp_dims02",
       x({3, 4, 5}, -3, 3),
       [](const auto& v) {
         return logsumexp(v[0], {0, 2});
       },
       [](const auto& v) {
         return v[0].logsumexp({0, 2});
       },
       {"logsumexp_dims02"}},
      {"logsumexp_last",
       x({4, 3}, -3, 3),
       [](const auto& v) { return logsumexp(v[0], -1); },
       [](const auto& v) { return v[0].logsumexp(-1); },
       {"logsumexp_inf_rows"}},
      {"logsumexp_dim0",
       x({3, 4}, -3, 3),
       [](const auto& v) { return logsumexp(v[0], 0); },
       [](const auto& v) { return v[0].logsumexp(0); },
       {"logsumexp_inf_column_dim0"}},
      {"cumsum_dim1",
       x({3, 4, 5}),
       [](const auto& v) { return cumsum(v[0], 1); },
       [](const auto& v) { return v[0].cumsum(1); },
       {"cumsum_dim1"},
       {ff}},
      {"cumsum_last",
       x({3, 5}),
       [](const auto& v) { return cumsum(v[0], -1); },
       [](const auto& v) { return v[0].cumsum(-1); },
       {"cumsum_dim_neg1_zeros"}},
      {"cumsum_dim0",
       x({6, 3}),
       [](const auto& v) { return cumsum(v[0], 0); },
       [](const auto& v) { return v[0].cumsum(0); },
       {"cumsum_dim0", "cumsum_0d"}},
      {"norm_all",
       x({3, 4}),
       [](const auto& v) { return norm(v[0]); },
       [](const auto& v) { return v[0].norm(); },
       {"norm_all"}},
      {"norm_p2_dim1",
       x({3, 4}),
       [](const auto& v) { return norm(v[0], 2, {1}); },
       [](const auto& v) { return v[0].norm(2, 1); },
       {"norm_p2_dim1_zero_row"}},
      {"norm_p1_last",
       x({3, 4}),
       [](const auto& v) { return norm(v[0], 1, {-1}); },
       [](const auto& v) { return v[0].norm(1, -1); },
       {"norm_p1_dim_neg1_zeros"}},
      {"norm_inf_dim1_keepdim",
       x({3, 4}),
       [](const auto& v) { return norm(v[0], inf, {1}, true); },
       [](const auto& v) { return v[0].norm(inf, 1, true); },
       {"norm_inf_ties_zero_row"}},
      {"norm_p3_dim0",
       x({4, 3}),
       [](const auto& v) { return norm(v[0], 3, {0}); },
       [](const auto& v) { return v[0].norm(3, 0); },
       {"norm_p3_dim0_zero_col"}},
      {"norm_p05_dim0",
       x({4, 3}),
       [](const auto& v) { return norm(v[0], 0.5, {0}); },
       [](const auto& v) { return v[0].norm(0.5, 0); },
       {"norm_p05_zeros"}},
      {"norm_p15_dim1",
       x({3, 4}),
       [](const auto& v) { return norm(v[0], 1.5, {1}); },
       [](const auto& v) { return v[0].norm(1.5, 1); },
       {"norm_p15_zero_row"}},
      {"norm_p0_dim0",
       x({4, 3}),
       [](const auto& v) { return norm(v[0], 0, {0}); },
       [](const auto& v) { return v[0].norm(0, 0); },
       {"norm_p0_count"}},
      {"norm_p2_dims02",
       x({2, 3, 4}),
       [](const auto& v) {
         return norm(v[0], 2, {0, 2});
       },
       [](const auto& v) {
         return v[0].norm(2, {0, 2});
       },
       {"norm_p2_dims02"}},
      // Element-wise.
      OpInfo{"neg", x({2, 3}), [](const auto& v) { return neg(v[0]); }, [](const auto& v) { return v[0].neg(); }}
          .also_on(ranks()),
      OpInfo{"exp", x({2, 3}, -2, 2), [](const auto& v) { return exp(v[0]); }, [](const auto& v) { return v[0].exp(); }}
          .also_on(ranks()),
      OpInfo{"log", x({2, 3}, 0.2, 3), [](const auto& v) { return log(v[0]); },
             [](const auto& v) { return v[0].log(); }}
          .also_on(ranks()),
      OpInfo{"sqrt", x({2, 3}, 0.2, 3), [](const auto& v) { return sqrt(v[0]); },
             [](const auto& v) { return v[0].sqrt(); }}
          .also_on(ranks()),
      OpInfo{"tanh", x({2, 3}, -3, 3), [](const auto& v) { return tanh(v[0]); },
             [](const auto& v) { return v[0].tanh(); }}
          .also_on(ranks()),
      OpInfo{"sigmoid", x({2, 3}, -6, 6), [](const auto& v) { return sigmoid(v[0]); },
             [](const auto& v) { return v[0].sigmoid(); }}
          .also_on(ranks()),
      {"abs", x({3, 5}), [](const auto& v) { return abs(v[0]); }, [](const auto& v) { return v[0].abs(); }, {"abs"}},
      OpInfo{"log1p",
             x({3, 4}, -0.5, 3),
             [](const auto& v) { return log1p(v[0]); },
             [](const auto& v) { return v[0].log1p(); },
             {"log1p"}}
          .also_on(ranks()),
      OpInfo{"sin",
             x({3, 4}, -4, 4),
             [](const auto& v) { return sin(v[0]); },
             [](const auto& v) { return v[0].sin(); },
             {"sin"}}
          .also_on(ranks()),
      OpInfo{"cos",
             x({3, 4}, -4, 4),
             [](const auto& v) { return cos(v[0]); },
             [](const auto& v) { return v[0].cos(); },
             {"cos"}}
          .also_on(ranks()),
      OpInfo{"gelu", x({4, 5}, -4, 4), [](const auto& v) { return gelu(v[0]); }, {}, {"gelu"}, {ff}}.also_on(ranks()),
      OpInfo{"gelu_tanh",
             x({4, 5}, -4, 4),
             [](const auto& v) { return gelu(v[0], GeluApproximate::Tanh); },
             {},
             {"gelu_tanh"}}
          .also_on(ranks()),
      OpInfo{"silu", x({4, 5}, -6, 6), [](const auto& v) { return silu(v[0]); }, {}, {"silu"}, {ff}}.also_on(ranks()),
      {"leaky_relu", x({3, 5}), [](const auto& v) { return leaky_relu(v[0]); }, {}, {"leaky_relu"}, {ff}},
      {"leaky_relu_slope02",
       x({3, 5}),
       [](const auto& v) { return leaky_relu(v[0], 0.2); },
       {},
       {"leaky_relu_slope02"}},
      {"clamp_both",
       x({3, 4}),
       [](const auto& v) { return clamp(v[0], -0.5, 0.75); },
       [](const auto& v) { return v[0].clamp(-0.5, 0.75); },
       {"clamp_both", "clamp_nan"},
       {ff}},
      {"clamp_min",
       x({3, 4}),
       [](const auto& v) { return clamp(v[0], 0.0); },
       [](const auto& v) { return v[0].clamp(0.0); },
       {"clamp_min_only"}},
      {"clamp_max",
       x({3, 4}),
       [](const auto& v) { return clamp(v[0], std::nullopt, 0.75); },
       [](const auto& v) { return v[0].clamp(std::nullopt, 0.75); },
       {"clamp_max_only"}},
      {"clamp_min_gt_max",
       x({3, 4}),
       [](const auto& v) { return clamp(v[0], 0.5, -0.5); },
       [](const auto& v) { return v[0].clamp(0.5, -0.5); },
       {"clamp_min_gt_max"}},
      {"minimum",
       two("a", {3, 4}, "b", {3, 4}),
       [](const auto& v) { return minimum(v[0], v[1]); },
       [](const auto& v) { return v[0].minimum(v[1]); },
       {"minimum_ties", "minimum_nan"}},
      {"minimum_broadcast",
       two("a", {3, 1}, "b", {4}),
       [](const auto& v) { return minimum(v[0], v[1]); },
       [](const auto& v) { return v[0].minimum(v[1]); },
       {"minimum_broadcast_tie"},
       {ff, {128}}},
      {"maximum",
       two("a", {3, 4}, "b", {3, 4}),
       [](const auto& v) { return maximum(v[0], v[1]); },
       [](const auto& v) { return v[0].maximum(v[1]); },
       {"maximum_ties", "maximum_nan"}},
      {"maximum_broadcast",
       two("a", {3, 1}, "b", {4}),
       [](const auto& v) { return maximum(v[0], v[1]); },
       [](const auto& v) { return v[0].maximum(v[1]); },
       {"maximum_broadcast_tie"}},
      {"softplus", x({4, 5}, -3, 3), [](const auto& v) { return softplus(v[0]); }, {}, {"softplus"}, {ff}},
      {"softplus_beta2_threshold5",
       x({4, 5}),
       [](const auto& v) { return softplus(v[0], 2, 5); },
       {},
       {"softplus_beta2_threshold5"}},
      {"softplus_beta05", x({4, 5}, -3, 3), [](const auto& v) { return softplus(v[0], 0.5); }, {}, {"softplus_beta05"}},
      {"elu", x({3, 4}, -3, 3), [](const auto& v) { return elu(v[0]); }, {}, {"elu"}, {ff}},
      {"elu_alpha05", x({3, 5}, -3, 3), [](const auto& v) { return elu(v[0], 0.5); }, {}, {"elu_alpha05_zeros"}},
      // Triangles.
      {"tril",
       x({4, 4}),
       [](const auto& v) { return tril(v[0]); },
       [](const auto& v) { return v[0].tril(); },
       {"tril"}},
      {"tril_diag1",
       x({2, 3, 5}),
       [](const auto& v) { return tril(v[0], 1); },
       [](const auto& v) { return v[0].tril(1); },
       {"tril_diag1_batched_wide"}},
      {"tril_diag_neg2",
       x({5, 3}),
       [](const auto& v) { return tril(v[0], -2); },
       [](const auto& v) { return v[0].tril(-2); },
       {"tril_diag_neg2_tall"}},
      {"triu",
       x({3, 5}),
       [](const auto& v) { return triu(v[0]); },
       [](const auto& v) { return v[0].triu(); },
       {"triu"}},
      {"triu_diag2",
       x({2, 4, 4}),
       [](const auto& v) { return triu(v[0], 2); },
       [](const auto& v) { return v[0].triu(2); },
       {"triu_diag2_batched"}},
      {"triu_diag_neg1",
       x({2, 5, 3}),
       [](const auto& v) { return triu(v[0], -1); },
       [](const auto& v) { return v[0].triu(-1); },
       {"triu_diag_neg1_batched_tall"}},
      // Shapes.
      {"pad_last",
       x({2, 3}),
       [](const auto& v) {
         return pad(v[0], {1, 2});
       },
       {},
       {"pad_last"}},
      {"pad_2d_value",
       x({2, 3, 4}),
       [](const auto& v) {
         return pad(v[0], {1, 0, 2, 1}, 0.5);
       },
       {},
       {"pad_2d_value"}},
      {"pad_negative_crop",
       x({3, 5}),
       [](const auto& v) {
         return pad(v[0], {-1, 2, 0, -1});
       },
       {},
       {"pad_negative_crop"}},
      {"pad_no_pads", x({2, 3}), [](const auto& v) { return pad(v[0], {}); }, {}, {"pad_no_pads"}},
      {"pad_crop_to_zero",
       x({2, 3}),
       [](const auto& v) {
         return pad(v[0], {0, -3});
       },
       {},
       {"pad_crop_to_zero"}},
      {"pad_3d_all",
       x({2, 2, 3}),
       [](const auto& v) {
         return pad(v[0], {1, 1, 0, 2, 1, 0}, -1.5);
       },
       {},
       {"pad_3d_all"}},
      {"repeat_lead_dims",
       x({2, 3}),
       [](const auto& v) {
         return repeat(v[0], {2, 1, 2});
       },
       [](const auto& v) { return v[0].repeat(2, 1, 2); },
       {"repeat_lead_dims"}},
      {"repeat_ones",
       x({2, 3}),
       [](const auto& v) {
         return repeat(v[0], {1, 1});
       },
       [](const auto& v) { return v[0].repeat(1, 1); },
       {"repeat_ones"}},
      {"repeat_zero",
       x({2, 3}),
       [](const auto& v) {
         return repeat(v[0], {2, 0});
       },
       [](const auto& v) { return v[0].repeat(2, 0); },
       {"repeat_zero"}},
      {"repeat_3d",
       x({2, 1, 3}),
       [](const auto& v) {
         return repeat(v[0], {1, 4, 2});
       },
       [](const auto& v) { return v[0].repeat(1, 4, 2); },
       {"repeat_3d"}},
      // Normalize and cosine similarity.
      {"normalize", x({3, 4}), [](const auto& v) { return normalize(v[0]); }, {}, {"normalize_zero_row"}},
      {"normalize_p1_dim0", x({4, 3}), [](const auto& v) { return normalize(v[0], 1, 0); }, {}, {"normalize_p1_dim0"}},
      {"normalize_eps",
       x({3, 4}),
       [](const auto& v) { return normalize(v[0], 2, 1, 0.1); },
       {},
       {"normalize_eps_clamped"}},
      {"normalize_inf_last",
       x({2, 3, 4}),
       [](const auto& v) { return normalize(v[0], inf, -1); },
       {},
       {"normalize_inf_dim_neg1"}},
      {"cosine_similarity",
       two("x1", {4, 5}, "x2", {4, 5}),
       [](const auto& v) { return cosine_similarity(v[0], v[1]); },
       {},
       {"cosine_similarity", "cosine_similarity_tiny_zero_rows"}},
      {"cosine_similarity_broadcast_last",
       two("x1", {3, 1, 4}, "x2", {5, 4}),
       [](const auto& v) { return cosine_similarity(v[0], v[1], -1); },
       {},
       {"cosine_similarity_broadcast_neg1"}},
      // Inputs whose squared norms' product stays above eps^2: where torch 1.13 clamps it, its gradient
      // (which tapegrad's follows) is not the derivative.
      {"cosine_similarity_dim0_eps",
       two("x1", {4, 3}, "x2", {4, 3}, 0.5, 1.5),
       [](const auto& v) { return cosine_similarity(v[0], v[1], 0, 0.5); },
       {},
       {"cosine_similarity_dim0_eps"}},
      // Losses.
      {"mse_loss_mean", xt({4, 5}, {4, 5}), [](const auto& v) { return mse_loss(v[0], v[1]); }, {}, {"mse_loss_mean"}},
      {"mse_loss_sum",
       xt({4, 5}, {4, 5}),
       [](const auto& v) { return mse_loss(v[0], v[1], Reduction::Sum); },
       {},
       {"mse_loss_sum"}},
      {"mse_loss_none",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return mse_loss(v[0], v[1], Reduction::None); },
       {},
       {"mse_loss_none"}},
      {"mse_loss_broadcast_mean",
       xt({3, 4}, {4}),
       [](const auto& v) { return mse_loss(v[0], v[1]); },
       {},
       {"mse_loss_broadcast_mean"}},
      {"l1_loss_mean", xt({4, 5}, {4, 5}), [](const auto& v) { return l1_loss(v[0], v[1]); }, {}, {"l1_loss_mean"}},
      {"l1_loss_sum",
       xt({4, 5}, {4, 5}),
       [](const auto& v) { return l1_loss(v[0], v[1], Reduction::Sum); },
       {},
       {"l1_loss_sum"}},
      {"l1_loss_none_broadcast",
       xt({2, 3, 4}, {3, 1}),
       [](const auto& v) { return l1_loss(v[0], v[1], Reduction::None); },
       {},
       {"l1_loss_none_broadcast"}},
      {"smooth_l1_loss_mean",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return smooth_l1_loss(v[0], v[1]); },
       {},
       {"smooth_l1_loss_mean"}},
      {"smooth_l1_loss_beta05_none",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return smooth_l1_loss(v[0], v[1], Reduction::None, 0.5); },
       {},
       {"smooth_l1_loss_beta05_none"}},
      {"smooth_l1_loss_beta0_sum",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return smooth_l1_loss(v[0], v[1], Reduction::Sum, 0.0); },
       {},
       {"smooth_l1_loss_beta0_sum"}},
      {"smooth_l1_loss_broadcast_mean",
       xt({3, 4}, {4}),
       [](const auto& v) { return smooth_l1_loss(v[0], v[1]); },
       {},
       {"smooth_l1_loss_broadcast_mean"}},
      {"huber_loss_mean",
       xt({4, 5}, {4, 5}),
       [](const auto& v) { return huber_loss(v[0], v[1]); },
       {},
       {"huber_loss_mean"}},
      {"huber_loss_delta2_none",
       xt({3, 4}, {3, 4}, -3, 3),
       [](const auto& v) { return huber_loss(v[0], v[1], Reduction::None, 2.0); },
       {},
       {"huber_loss_delta2_none"}},
      {"huber_loss_delta05_sum",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return huber_loss(v[0], v[1], Reduction::Sum, 0.5); },
       {},
       {"huber_loss_delta05_sum"}},
      // kl_div's target is a probability (above 0: its gradient is log t + 1 - x) or, with
      // log_target, a log-probability.
      {"kl_div_mean",
       xt({3, 4}, {3, 4}, 0.1, 1),
       [](const auto& v) { return kl_div(v[0], v[1]); },
       {},
       {"kl_div_mean"}},
      {"kl_div_batchmean",
       xt({3, 4}, {3, 4}, 0.1, 1),
       [](const auto& v) { return kl_div(v[0], v[1], Reduction::BatchMean); },
       {},
       {"kl_div_batchmean"}},
      {"kl_div_sum",
       xt({3, 4}, {3, 4}, 0.1, 1),
       [](const auto& v) { return kl_div(v[0], v[1], Reduction::Sum); },
       {},
       {"kl_div_sum"}},
      {"kl_div_none",
       xt({3, 4}, {3, 4}, 0.1, 1),
       [](const auto& v) { return kl_div(v[0], v[1], Reduction::None); },
       {},
       {"kl_div_target_zeros_none"}},
      {"kl_div_log_target_batchmean",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return kl_div(v[0], v[1], Reduction::BatchMean, true); },
       {},
       {"kl_div_log_target_batchmean"}},
      {"kl_div_log_target_none",
       xt({3, 4}, {3, 4}),
       [](const auto& v) { return kl_div(v[0], v[1], Reduction::None, true); },
       {},
       {"kl_div_log_target_none"}},
      {"kl_div_broadcast_batchmean",
       xt({2, 3, 4}, {3, 4}, 0.1, 1),
       [](const auto& v) { return kl_div(v[0], v[1], Reduction::BatchMean); },
       {},
       {"kl_div_broadcast_batchmean"}},
  };
}

}  // namespace

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> table = entries();
  return table;
}

const OpInfo& find_op(const std::string& name) {
  for (const auto& op : op_registry())
    if (op.name == name) return op;
  throw std::invalid_argument("the op registry has no entry '" + name + "'");
}

template <typename T>
std::vector<Tensor<T>> sample_inputs(const OpInfo& op, std::uint64_t seed, const std::vector<Shape>& shapes) {
  if (!shapes.empty() && shapes.size() != op.inputs.size())
    throw std::invalid_argument(op.name + ": " + std::to_string(shapes.size()) + " shapes for " +
                                std::to_string(op.inputs.size()) + " inputs");
  Generator gen(seed);
  std::vector<Tensor<T>> out;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const OpInput& in = op.inputs[i];
    out.push_back(Tensor<T>::uniform(shapes.empty() ? in.shape : shapes[i], in.low, in.high, gen,
                                     /*requires_grad=*/true));
  }
  return out;
}

TAPEGRAD_INSTANTIATE(sample_inputs);

}  // namespace tapegrad::testing
