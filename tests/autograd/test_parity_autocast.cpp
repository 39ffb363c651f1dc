// Mixed precision against torch 1.13: matmul, linear, linear_activation and the three attention entry
// points under tapegrad::autocast, outputs and input gradients, read from
// tests/fixtures/autocast.safetensors (written by tests/fixtures/make_autocast_fixtures.py, which
// documents the file and derives both bounds; torch is not needed here). Each result is checked
//  (a) against the exact reference, tapegrad's algorithm in float64 on the same bfloat16 operands:
//      |tapegrad - ref| <= bound, the script's rigorous bound on float32 rounding alone (gamma_K =
//      K 2^-24 / (1 - K 2^-24) times sum |a_i b_i| for each product of K terms, whatever the order of
//      summation, so for every kernel; 2^-24 per float elementwise step), typically 1e-6 relative;
//      more, a bfloat16 ulp of it, behind an intermediate value that float32's own error could round
//      to either bfloat16 neighbour;
//  (b) against torch's autocast: |tapegrad - torch| <= bound + torch_bound, where torch_bound = the
//      exact difference between ref and the unrounded computation X on the same operands, plus the
//      propagated bound of torch's roundings of every op's output to bfloat16 (2^-8 relative each:
//      the unit roundoff of an 8-bit significand), which the script checks torch's own results meet.
// Neither depends on the kernel: they hold for oneDNN's native bfloat16 products and for the float
// kernels on rounded operands (ONEDNN_MAX_CPU_ISA=AVX2, TAPEGRAD_FLOAT_GEMM=openblas) alike.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tests/parity.hpp"

using namespace tapegrad;

namespace {

const io::safetensors::File& fixture() { return testing::fixture_file("autocast.safetensors"); }

// A bound of the file (stored as float32, rounded up) in double.
xt::xarray<double> bound(const std::string& key) { return fixture().get<float>(key); }

class Args : public testing::CaseInputs<float> {
 public:
  explicit Args(std::string name) : testing::CaseInputs<float>(fixture(), std::move(name)) {}
  std::shared_ptr<const BoolArray> mask(const std::string& name) const {
    return std::make_shared<const BoolArray>(this->file_.get<bool>(this->prefix_ + ".arg." + name));
  }
};

using Op = std::function<Tensor<float>(const Args&)>;

// Every case of the fixture file, as tapegrad calls it; each mirrors the case of the same name in
// make_autocast_fixtures.py.
std::vector<std::pair<std::string, Op>> cases() {
  const auto mm = [](const Args& a) { return matmul(a.in("a"), a.in("b")); };
  const auto fused = [](Activation act) {
    return [act](const Args& a) { return linear_activation(a.in("x"), a.in("weight"), a.in("bias"), act); };
  };
  const auto padding = [](const Args& a) {
    AttentionMasks<float> m;
    m.key_padding_mask = a.mask("key_padding_mask");
    return m;
  };
  return {
      {"matmul_broadcast", mm},
      {"matmul_shared", mm},
      {"linear", [](const Args& a) { return linear(a.in("x"), a.in("weight"), a.in("bias")); }},
      {"linear_relu", fused(Activation::ReLU)},
      {"linear_gelu", fused(Activation::GELU)},
      {"attention_causal",
       [](const Args& a) {
         return scaled_dot_product_attention(a.in("q"), a.in("k"), a.in("v"), {}, 0.0, true).first;
       }},
      {"attention_padding",
       [padding](const Args& a) {
         return scaled_dot_product_attention(a.in("q"), a.in("k"), a.in("v"), padding(a)).first;
       }},
      {"mha_padding",
       [padding](const Args& a) { return multi_head_attention(a.in("q"), a.in("k"), a.in("v"), 2, padding(a)).first; }},
      {"attention_blocks",
       [](const Args& a) { return scaled_dot_product_attention(a.in("q"), a.in("k"), a.in("v")).first; }},
      {"mha_self_causal", [](const Args& a) { return multi_head_self_attention(a.in("qkv"), 2, {}, 0.0, true).first; }},
  };
}

// The largest |got - want| / allowed over the elements (0 when all are equal), and where.
struct Worst {
  double ratio = 0;
  std::size_t at = 0;
};
Worst worst(const xt::xarray<float>& got, const xt::xarray<double>& want, const xt::xarray<double>& allowed) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.shape() == allowed.shape());
  Worst w;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(static_cast<double>(got.data()[i]) - want.data()[i]);
    const double ratio = diff == 0 ? 0 : diff / allowed.data()[i];  // a NaN is the worst
    if (!(ratio <= w.ratio)) w = {ratio, i};
  }
  return w;
}

std::string describe(const Worst& w, const xt::xarray<float>& got, const xt::xarray<double>& want) {
  std::ostringstream out;
  out.precision(9);
  out << "flat element " << w.at << ": " << got.data()[w.at] << " against " << want.data()[w.at] << " (" << w.ratio
      << " times the bound)";
  return out.str();
}

// One run of a case: its output and the gradients of its inputs for the recorded upstream gradient,
// under autocast (backward after the scope, as in training) or in float32.
std::map<std::string, xt::xarray<float>> run(const std::string& name, const Op& op, bool mixed) {
  const Args args(name);
  Tensor<float> out;
  {
    autocast guard(mixed);
    out = op(args);
  }
  out.backward(fixture().get<float>(name + ".gout"));
  std::map<std::string, xt::xarray<float>> results{{"out", out.data()}};
  for (const auto& [input, tensor] : args.inputs()) {
    REQUIRE(tensor.has_grad());
    results["grad." + input] = tensor.grad();
  }
  return results;
}

}  // namespace

TEST_CASE("autocast ops equal the exact bfloat16-operand reference to float32 rounding", "[autocast][parity]") {
  for (const auto& [name, op] : cases()) {
    DYNAMIC_SECTION(name) {
      for (const auto& [key, got] : run(name, op, true)) {
        const auto ref = fixture().get<double>(name + ".ref." + key);
        const Worst w = worst(got, ref, bound(name + ".bound." + key));
        INFO(name << " " << key << ": " << describe(w, got, ref));
        CHECK(w.ratio <= 1);
      }
    }
  }
}

TEST_CASE("autocast ops match torch 1.13's autocast within its bfloat16 roundings", "[autocast][parity]") {
  for (const auto& [name, op] : cases()) {
    DYNAMIC_SECTION(name) {
      for (const auto& [key, got] : run(name, op, true)) {
        const xt::xarray<double> torch_result = fixture().get<float>(name + ".torch." + key);
        const xt::xarray<double> allowed = bound(name + ".bound." + key) + bound(name + ".torch_bound." + key);
        const Worst w = worst(got, torch_result, allowed);
        INFO(name << " " << key << ": " << describe(w, got, torch_result));
        CHECK(w.ratio <= 1);
      }
    }
  }
}

TEST_CASE("the exact-reference check tells bfloat16 products from float32 ones", "[autocast][parity]") {
  // The same ops outside autocast (float32 operands) must fail the check above by 10 times the bound at
  // least (under autocast, tapegrad stays below 0.2 of it): rounding an operand to bfloat16 moves a
  // product by ~2^-9 relative, the bound is ~2^-20 of the terms' size, or a bfloat16 ulp of the few
  // intermediate values (attention's dS, mostly) so near a rounding boundary that float32's own error
  // may round them either way, which leaves ~30 times the bound in attention_blocks. Not the bias gradient
  // of linear, which sums the upstream gradient in float in both precisions (bit for bit, checked),
  // nor linear_relu's, the same sum wherever the pre-activation keeps its sign in both.
  for (const auto& [name, op] : cases()) {
    DYNAMIC_SECTION(name) {
      const auto mixed = run(name, op, true);
      for (const auto& [key, got] : run(name, op, false)) {
        INFO(name << " " << key);
        if (key == "grad.bias") {
          if (name == "linear") CHECK(got == mixed.at(key));
          continue;
        }
        const auto ref = fixture().get<double>(name + ".ref." + key);
        CHECK(worst(got, ref, bound(name + ".bound." + key)).ratio > 10);
      }
    }
  }
}

TEST_CASE("the autocast parity table covers every case of autocast.safetensors", "[autocast][parity]") {
  std::set<std::string> in_file, in_table;
  for (const auto& name : fixture().names()) in_file.insert(name.substr(0, name.find('.')));
  for (const auto& entry : cases()) in_table.insert(entry.first);
  CHECK(in_file == in_table);
}
