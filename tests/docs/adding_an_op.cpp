// The example op of docs/design.md ("Adding an op to tapegrad") built from the section's blocks as
// written (tests/docs/adding_an_op.cmake extracts them): the declaration and the definition in
// namespace tapegrad, as in a library file, and the registry entry, on which the op table's generic
// checks run: gradcheck in double, float against double, the method form against the function form.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tapegrad/autograd/autograd.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tests/autograd/op_registry.hpp"

namespace tapegrad {
#include "declaration.inc"
#include "definition.inc"
}  // namespace tapegrad

int main() {
  using namespace tapegrad;
  using testing::OpInfo;
  const OpInfo op =
#include "entry.inc"
      ;
  int failures = 0;
  const auto fail = [&failures, &op](const std::string& what) {
    std::fprintf(stderr, "adding_an_op: %s: %s\n", op.name.c_str(), what.c_str());
    ++failures;
  };
  const auto result = gradcheck(op.function.get<double>(), testing::sample_inputs<double>(op, 1), op.gradcheck);
  if (!result.ok) fail(result.message);
  // The float form agrees with the double one on the same values (to float's rounding).
  const auto in64 = testing::sample_inputs<double>(op, 2);
  std::vector<Tensor<float>> in32;
  for (const auto& t : in64) in32.emplace_back(xt::xarray<float>(xt::cast<float>(t.data())));
  const Tensor<double> y64 = op.function.get<double>()(in64);
  const Tensor<float> y32 = op.function.get<float>()(in32);
  for (std::size_t i = 0; i < y64.numel(); ++i)
    if (!(std::abs(y32.data().data()[i] - y64.data().data()[i]) <= 1e-5 * (1 + std::abs(y64.data().data()[i]))))
      fail("float and double differ at flat element " + std::to_string(i));
  if (op.method && !(op.method.get<double>()(in64).data() == y64.data())) fail("the method form differs");
  if (!op.bench.empty() && op.bench.size() != op.inputs.size()) fail("bench shapes do not match the inputs");
  if (failures == 0) std::printf("adding_an_op: %s passes the op table's checks\n", op.name.c_str());
  return failures == 0 ? 0 : 1;
}
