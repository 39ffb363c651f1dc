// The generic checks of every entry of the op table (tests/autograd/op_registry.hpp): gradcheck in
// double, torch parity in float and double against tests/fixtures/ops.safetensors, and the method
// form against the function form.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "tests/autograd/op_registry.hpp"
#include "tests/helpers.hpp"
#include "tests/parity.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

const io::safetensors::File& fixture() { return testing::fixture_file("ops.safetensors"); }

// The entry's function on the fixture case's inputs: the output, then backward from the recorded
// upstream gradient and every input's gradient, each against torch's.
template <typename T>
void check_against_torch(const OpInfo& op, const std::string& key) {
  const std::string prefix = key + "." + dtype_tag<T>();
  const testing::CaseInputs<T> args(fixture(), prefix);
  std::set<std::string> names, in_file;
  std::vector<Tensor<T>> inputs;
  for (const auto& in : op.inputs) {
    names.insert(in.name);
    inputs.push_back(args.in(in.name));
  }
  for (const auto& entry : args.inputs()) in_file.insert(entry.first);
  INFO("the fixture's inputs are the entry's");
  REQUIRE(names == in_file);
  const auto expect = [&prefix](const xt::xarray<T>& got, const std::string& role) {
    const std::string problem = mismatch(got, fixture().get<T>(prefix + role));
    INFO(prefix << role << ": " << problem);
    CHECK(problem.empty());
  };
  const Tensor<T> out = op.function.get<T>()(inputs);
  expect(out.data(), ".out");
  out.backward(fixture().get<T>(prefix + ".gout"));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of " << op.inputs[i].name);
    REQUIRE(inputs[i].has_grad());
    expect(inputs[i].grad(), ".grad." + op.inputs[i].name);
  }
}

// The method form gives the function form's output and gradients, exactly: it is the same op.
template <typename T>
void check_method(const OpInfo& op) {
  const auto a = sample_inputs<T>(op, 7), b = sample_inputs<T>(op, 7);
  const Tensor<T> fa = op.function.get<T>()(a), mb = op.method.get<T>()(b);
  CHECK(mb.shape() == fa.shape());
  CHECK(mb.data() == fa.data());
  Generator gen(8);
  const xt::xarray<T> gout = Tensor<T>::uniform(fa.shape(), -1, 1, gen).data();
  fa.backward(gout);
  mb.backward(gout);
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("gradient of " << op.inputs[i].name);
    CHECK(b[i].grad() == a[i].grad());
  }
}

}  // namespace

TEST_CASE("every op of the registry passes gradcheck in double", "[registry][gradcheck]") {
  for (const auto& op : op_registry()) {
    DYNAMIC_SECTION(op.name) {
      std::vector<std::vector<Shape>> samples{{}};  // the inputs' own shapes first
      samples.insert(samples.end(), op.more_samples.begin(), op.more_samples.end());
      std::uint64_t seed = 1;
      for (const auto& shapes : samples) {
        const auto inputs = sample_inputs<double>(op, seed++, shapes);
        const auto result = gradcheck(op.function.get<double>(), inputs, op.gradcheck);
        INFO("sample " << seed - 1 << ": " << result.message);
        CHECK(result.ok);
      }
    }
  }
}

TEMPLATE_TEST_CASE("every op of the registry matches torch 1.13 on its fixture cases", "[registry][parity]", float,
                   double) {
  for (const auto& op : op_registry()) {
    for (const auto& key : op.fixtures) {
      DYNAMIC_SECTION(op.name << " on " << key) { check_against_torch<TestType>(op, key); }
    }
  }
}

TEMPLATE_TEST_CASE("every method form of the registry equals its function form", "[registry]", float, double) {
  for (const auto& op : op_registry()) {
    if (!op.method) continue;
    DYNAMIC_SECTION(op.name) { check_method<TestType>(op); }
  }
}

TEST_CASE("the registry's names are unique and its fixture cases exist in both dtypes", "[registry]") {
  std::set<std::string> names, in_file;
  for (const auto& name : fixture().names()) in_file.insert(name);
  for (const auto& op : op_registry()) {
    INFO(op.name);
    CHECK(names.insert(op.name).second);
    CHECK(op.function);
    if (!op.bench.empty()) CHECK(op.bench.size() == op.inputs.size());
    for (const auto& shapes : op.more_samples) CHECK(shapes.size() == op.inputs.size());
    for (const auto& key : op.fixtures)
      for (const std::string tag : {".f32", ".f64"}) {
        INFO(key << tag);
        CHECK(in_file.count(key + tag + ".out") == 1);
      }
  }
  CHECK_THROWS_WITH(testing::find_op("no_such_op"), "the op registry has no entry 'no_such_op'");
}
