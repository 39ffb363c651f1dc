// load_state_dict converts between F64 files and float models and between F32 files and double
// models, as torch's copy_ does (and io::load_state_dict between state_dicts in memory), and still
// refuses wrong names, shapes and non-float dtypes.
#include <catch2/catch.hpp>
#include <string>
#include <xtensor/xbuilder.hpp>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/state_dict.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
namespace st = tapegrad::io::safetensors;
using tapegrad::testing::TempDir;

TEST_CASE("load_state_dict converts a float64 file into a float32 model and back", "[io][convert]") {
  TempDir dir;
  Generator gen(3);
  // A double "model" saved as F64, loaded into a float one: each value rounded to nearest float.
  StateDict<double> model64{{"fc.weight", Tensor<double>::normal({3, 4}, 0.0, 1.0, gen, true)},
                            {"fc.bias", Tensor<double>::normal({3}, 0.0, 1.0, gen, true)},
                            {"scale", Tensor<double>::scalar(1.0 / 3.0)}};
  const auto path64 = dir.file("model64.safetensors");
  st::save_state_dict(path64, model64);
  REQUIRE(st::File(path64).dtype("fc.weight") == st::Dtype::F64);

  auto w32 = Tensor<float>::zeros({3, 4}, true), b32 = Tensor<float>::zeros({3}, true);
  auto s32 = Tensor<float>::zeros({});
  StateDict<float> model32{{"fc.weight", w32}, {"fc.bias", b32}, {"scale", s32}};
  st::load_state_dict(path64, model32);
  for (const auto& [name, t64] : model64) {
    const auto& v64 = t64.data();
    const auto& v32 = model32.at(name).data();
    REQUIRE(v32.size() == v64.size());
    for (std::size_t i = 0; i < v64.size(); ++i) CHECK(v32.data()[i] == static_cast<float>(v64.data()[i]));
  }
  CHECK(w32.requires_grad());  // loaded through the alias, still the model's parameter
  CHECK(s32.item() == static_cast<float>(1.0 / 3.0));

  // And back: the float model saved as F32 loads into a double model exactly (widening is exact).
  const auto path32 = dir.file("model32.safetensors");
  st::save_state_dict(path32, model32);
  REQUIRE(st::File(path32).dtype("fc.weight") == st::Dtype::F32);
  StateDict<double> back{{"fc.weight", Tensor<double>::zeros({3, 4})},
                         {"fc.bias", Tensor<double>::zeros({3})},
                         {"scale", Tensor<double>::zeros({})}};
  st::load_state_dict(path32, back);
  for (const auto& [name, t] : back) {
    const auto& v32 = model32.at(name).data();
    for (std::size_t i = 0; i < v32.size(); ++i) CHECK(t.data().data()[i] == static_cast<double>(v32.data()[i]));
  }
  // The same through the prefixed form a checkpoint uses.
  StateDict<float> weight_only{{"weight", Tensor<float>::zeros({3, 4})}};
  st::load_state_dict(st::File(path64), weight_only, /*strict=*/false, "fc.");
  CHECK(weight_only.at("weight").data() == w32.data());
}

TEST_CASE("a converting load still refuses wrong shapes, names and dtypes, and changes nothing", "[io][convert]") {
  TempDir dir;
  const auto path = dir.file("f64.safetensors");
  st::save_file(path, {{"w", xt::xarray<double>({{1.0, 2.0}, {3.0, 4.0}})},
                       {"ids", xt::xarray<std::int64_t>({1, 2})},
                       {"mask", xt::xarray<bool>({true, false})}});
  auto w = Tensor<float>::zeros({2, 3});
  auto ids = Tensor<float>::zeros({2});
  auto mask = Tensor<float>::zeros({2});
  auto other = Tensor<float>::zeros({1});
  StateDict<float> target{{"w", w}, {"ids", ids}, {"mask", mask}, {"other", other}};
  const std::string m = testing::error_of([&] { st::load_state_dict(path, target); });
  CHECK_THAT(m, Catch::Contains("4 problem(s)"));
  CHECK_THAT(m, Catch::Contains("\"w\" has shape [2, 2] in the file, [2, 3] in the model"));
  CHECK_THAT(m, Catch::Contains("\"ids\" is I64 in the file, F32 in the model (only F16, BF16, F32 and F64 convert)"));
  CHECK_THAT(m,
             Catch::Contains("\"mask\" is BOOL in the file, F32 in the model (only F16, BF16, F32 and F64 convert)"));
  CHECK_THAT(m, Catch::Contains("missing \"other\""));
  CHECK(w.data() == xt::xarray<float>(xt::zeros<float>({2, 3})));  // nothing changed
  StateDict<float> renamed{{"weight", Tensor<float>::zeros({2, 2})}};
  CHECK_THROWS_WITH(st::load_state_dict(path, renamed),
                    Catch::Contains("unexpected \"w\"") && Catch::Contains("missing \"weight\""));
}

TEST_CASE("io::load_state_dict copies a state_dict in memory, converting, and refuses what does not fit",
          "[io][convert]") {
  auto w32 = Tensor<float>::zeros({2, 2}, true);
  StateDict<float> target{{"w", w32}, {"b", Tensor<float>::zeros({2})}};
  const StateDict<double> source{{"w", Tensor<double>::from_vector({0.1, 0.2, 0.3, 0.4}, {2, 2})},
                                 {"b", Tensor<double>::from_vector({1.0 / 3.0, -2.0}, {2})}};
  io::load_state_dict(target, source);
  CHECK(w32.data()(1, 0) == 0.3f);  // into the tensor the target holds, converted to nearest
  CHECK(target.at("b").data()(0) == static_cast<float>(1.0 / 3.0));

  // An undefined tensor on either side and a value beyond float's range are named; nothing changes.
  const StateDict<double> bad{{"w", Tensor<double>()}, {"b", Tensor<double>::from_vector({1e300, 0.0}, {2})}};
  CHECK_THROWS_WITH(io::load_state_dict(target, bad),
                    Catch::Contains("2 problem(s)") &&
                        Catch::Contains("\"w\" is an undefined tensor in the state_dict") &&
                        Catch::Contains("\"b\" holds inf at flat index 0"));
  CHECK(w32.data()(1, 0) == 0.3f);
  StateDict<float> undefined_target{{"w", Tensor<float>()}};
  CHECK_THROWS_WITH(io::load_state_dict(undefined_target, source, /*strict=*/false),
                    Catch::Contains("\"w\" is an undefined tensor in the model"));
}
