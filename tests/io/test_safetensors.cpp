// Safetensors reading and writing (round trips, files from the reference layout, every malformed
// file, atomic writes), state_dict loading with all mismatches reported, training checkpoints.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/optim/optim.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tests/helpers.hpp"
#include "tests/io/read_every_tensor.hpp"

using namespace tapegrad;
namespace st = tapegrad::io::safetensors;
namespace fs = std::filesystem;

using tapegrad::testing::TempDir;

namespace {

const std::string kFixtures = TAPEGRAD_TEST_FIXTURES_DIR;

// A fresh directory, removed with its contents at the end of the test.
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A new file for every case: rewriting a truncated file makes ext4 flush it to disk (auto_da_alloc),
// which would make thousands of cases slow.
std::string write_fresh(const TempDir& dir, const std::string& bytes) {
  static int counter = 0;
  const auto path = dir.file("case_" + std::to_string(counter++) + ".safetensors");
  write_bytes(path, bytes);
  return path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file of these bytes at path does not open: a std::runtime_error that starts with the path and names
// the problem in a short message (it never echoes the input).
void check_refused(const std::string& path, const std::string& bytes, const std::string& problem) {
  INFO(problem);
  write_bytes(path, bytes);
  try {
    st::File f(path);
    FAIL("the file was accepted");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith(path) && Catch::Contains(problem));
    CHECK(what.size() < 600);
  }
}

std::string u64_le(std::uint64_t n) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[k] = static_cast<char>((n >> (8 * k)) & 0xff);
  return s;
}

// A file with the given header text and data bytes (no padding: readers must not require it).
std::string make_file(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

// The tensors the python reference reader expects in `make_optim_fixtures.py --check`.
std::map<std::string, st::Array> check_tensors() {
  std::map<std::string, st::Array> t;
  xt::xarray<float> f32 = xt::xarray<float>::from_shape({2, 3});
  for (std::size_t k = 0; k < 6; ++k) f32.data()[k] = static_cast<float>(k) * 0.5f - 1.0f;
  t["f32"] = f32;
  t["f64"] = xt::xarray<double>({1.0 / 3.0, -2.5, 1e300});
  t["i64"] = xt::xarray<std::int64_t>(
      {{std::numeric_limits<std::int64_t>::min(), -1}, {0, std::numeric_limits<std::int64_t>::max()}});
  t["u64"] = xt::xarray<std::uint64_t>({std::numeric_limits<std::uint64_t>::max(), 12345678901234567890ull});
  t["flags"] = xt::xarray<bool>({true, false, false, true});
  t["scalar"] = xt::xarray<double>(M_PI);
  t["empty"] = xt::xarray<float>::from_shape({0, 3});
  return t;
}

template <typename V>
void check_same(const st::File& f, const std::string& name, const xt::xarray<V>& expected) {
  INFO(name);
  CHECK(f.dtype(name) == st::dtype_of<V>());
  CHECK(f.shape(name) == Shape(expected.shape().begin(), expected.shape().end()));
  const auto got = f.get<V>(name);
  CHECK(got.shape() == expected.shape());
  CHECK(got == expected);
}

}  // namespace

TEST_CASE("safetensors round trip for every writable dtype, 0-d and empty tensors, metadata", "[io]") {
  TempDir dir;
  const auto path = dir.file("all.safetensors");
  const auto tensors = check_tensors();
  const st::Metadata metadata{{"format", "pt"}, {"note", "written by tapegrad"}};
  st::save_file(path, tensors, metadata);
  const st::File f(path);
  CHECK(f.names() == std::vector<std::string>{"empty", "f32", "f64", "flags", "i64", "scalar", "u64"});
  CHECK(f.metadata() == metadata);
  check_same(f, "f32", std::get<xt::xarray<float>>(tensors.at("f32")));
  check_same(f, "f64", std::get<xt::xarray<double>>(tensors.at("f64")));
  check_same(f, "i64", std::get<xt::xarray<std::int64_t>>(tensors.at("i64")));
  check_same(f, "u64", std::get<xt::xarray<std::uint64_t>>(tensors.at("u64")));
  check_same(f, "flags", std::get<xt::xarray<bool>>(tensors.at("flags")));
  check_same(f, "scalar", std::get<xt::xarray<double>>(tensors.at("scalar")));
  CHECK(f.shape("scalar").empty());
  CHECK(f.shape("empty") == Shape{0, 3});
  CHECK(f.get<float>("empty").size() == 0);

  // The header is padded with spaces to a multiple of 8, as the reference writer does.
  const std::string bytes = read_bytes(path);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(bytes[8] == '{');
  // No metadata: no "__metadata__" entry at all.
  st::save_file(path, {{"x", xt::xarray<double>({1.0})}});
  CHECK(st::File(path).metadata().empty());
  CHECK(read_bytes(path).find("__metadata__") == std::string::npos);
}

TEST_CASE("safetensors from views: the same bytes as from copies, and File::view reads them in place", "[io]") {
  TempDir dir;
  const auto copies = dir.file("copies.safetensors"), views = dir.file("views.safetensors");
  const auto tensors = check_tensors();
  const st::Metadata metadata{{"note", "views"}};
  st::save_file(copies, tensors, metadata);
  st::save_file(views, st::views_of(tensors), metadata);
  CHECK(read_bytes(views) == read_bytes(copies));
  const st::File f(views);
  for (const auto& name : f.names()) {
    const st::TensorView v = f.view(name);
    const st::TensorView original = st::views_of(tensors).at(name);
    CHECK(v.dtype == original.dtype);
    CHECK(v.shape == original.shape);
    REQUIRE(v.nbytes == original.nbytes);
    if (v.nbytes > 0) CHECK(std::memcmp(v.data, original.data, v.nbytes) == 0);  // "empty" has no bytes
  }
  CHECK_THROWS_WITH(f.view("nope"), Catch::Contains("no tensor named \"nope\""));
  // A view whose byte count does not match its shape is refused, naming it.
  const xt::xarray<float> three = {1.0F, 2.0F, 3.0F};
  st::TensorView short_view = st::view_of(three);
  short_view.nbytes = 8;
  CHECK_THROWS_WITH(st::save_file(views, std::map<std::string, st::TensorView>{{"w", short_view}}),
                    Catch::Contains("tensor \"w\" has 8 bytes for 3 F32 values"));
  CHECK(read_bytes(views) == read_bytes(copies));  // the previous file is untouched
}

TEST_CASE("our files parse with the reference reader of the fixture script", "[io]") {
  if (!fs::exists("/usr/bin/python3")) {
    WARN("/usr/bin/python3 is missing: cannot run the reference reader");
    return;
  }
  TempDir dir;
  const auto path = dir.file("for_python.safetensors");
  st::save_file(path, check_tensors(), {{"format", "pt"}, {"note", "written by tapegrad"}});
  const std::string cmd = "/usr/bin/python3 " + kFixtures + "/make_optim_fixtures.py --check " + path;
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a file written by the reference layout (python) reads back", "[io]") {
  const st::File f(kFixtures + "/io_reference.safetensors");
  CHECK(f.metadata() == st::Metadata{{"format", "pt"}, {"origin", "python"}});
  CHECK(f.names() == std::vector<std::string>{"empty", "f32", "f64", "half", "i32", "i64", "mask", "scalar"});
  check_same(f, "f32", xt::xarray<float>({{-1.0f, -0.5f, 0.0f}, {0.5f, 1.0f, 1.5f}}));
  check_same(f, "f64", xt::xarray<double>({1.0 / 3.0, -2.5, 1e300}));
  check_same(f, "i64",
             xt::xarray<std::int64_t>(
                 {{std::numeric_limits<std::int64_t>::min(), -1}, {0, std::numeric_limits<std::int64_t>::max()}}));
  check_same(f, "mask", xt::xarray<bool>({{true, false, true}}));
  check_same(f, "scalar", xt::xarray<double>(2.75));
  CHECK(f.shape("empty") == Shape{0, 2});
  CHECK(f.dtype("half") == st::Dtype::F16);
  CHECK(f.shape("half") == Shape{2});
  CHECK(f.dtype("i32") == st::Dtype::I32);
  CHECK_THROWS_WITH(f.get<float>("half"),
                    Catch::Contains("io_reference.safetensors") && Catch::Contains("tensor \"half\" is F16, not F32"));
  CHECK_THROWS_WITH(f.get<double>("f32"), Catch::Contains("tensor \"f32\" is F32, not F64"));
  CHECK_THROWS_WITH(f.get<bool>("i64"), Catch::Contains("tensor \"i64\" is I64, not BOOL"));
  CHECK_THROWS_WITH(f.shape("nope"), Catch::Contains("no tensor named \"nope\""));
  CHECK_FALSE(f.contains("nope"));
}

TEST_CASE("every malformed file is reported with its path and the problem", "[io]") {
  TempDir dir;
  const auto path = dir.file("bad.safetensors");
  auto expect = [&](const std::string& bytes, const std::string& problem) { check_refused(path, bytes, problem); };
  const std::string f32x2 = std::string(8, '\0');
  CHECK_THROWS_WITH(st::File(dir.file("missing.safetensors")), Catch::Contains("cannot open"));
  expect("", "file is 0 bytes, too short");
  expect("abc", "file is 3 bytes, too short");
  expect(u64_le(1000) + "{}", "header length 1000 exceeds the 2 bytes");
  expect(u64_le(std::numeric_limits<std::uint64_t>::max()) + "{}", "exceeds");
  expect(make_file("{\"a\": ", ""), "header is not valid JSON");
  expect(make_file("[1, 2]", ""), "header is a JSON array, not an object");
  expect(make_file(R"({"a": 3})", ""), "tensor \"a\": entry is a number, not an object");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [2]}})", f32x2),
         "needs \"dtype\", \"shape\" and \"data_offsets\"");
  expect(make_file(R"({"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}})", f32x2),
         "tensor \"a\": unknown dtype \"F33\"");
  expect(make_file(R"({"a": {"dtype": 4, "shape": [2], "data_offsets": [0, 8]}})", f32x2), "unknown dtype 4");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f32x2),
         "not a non-negative integer");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})", f32x2),
         "not a non-negative integer");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}})", f32x2), "is not an array");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", f32x2),
         "data_offsets [0, 16] out of range for 8 data bytes");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", f32x2), "out of range");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", f32x2),
         "is not a pair of non-negative integers");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f32x2),
         "shape [3] of F32 needs 12 bytes, data_offsets [0, 8] hold 8");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", f32x2),
         "needs too many bytes");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                       "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                   std::string(12, '\0')),
         "tensor \"b\": data starts at byte 8, expected 4 (leaves a gap)");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                       "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                   f32x2),
         "overlaps the previous tensor");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", f32x2),
         "data starts at byte 4, expected 0");
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", f32x2),
         "the tensors cover 4 data bytes but the file holds 8");
  expect(make_file(R"({"__metadata__": {"k": 1}})", ""), "metadata \"k\" is a number, not a string");
  expect(make_file(R"({"__metadata__": [1]})", ""), "\"__metadata__\" is not an object");
  // An empty file body and a header with only metadata are fine.
  write_bytes(path, make_file(R"({"__metadata__": {"k": "v"}})", ""));
  CHECK(st::File(path).names().empty());
  CHECK(st::File(path).metadata().at("k") == "v");
}

// A header of n empty F32 tensors t0, t1, ... (all at offset 0, a valid layout) and its file.
std::string empty_tensors_file(std::size_t n) {
  std::string header = "{";
  for (std::size_t k = 0; k < n; ++k) {
    header += (k ? ",\"t" : "\"t") + std::to_string(k) + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})";
  }
  return make_file(header + "}", "");
}

TEST_CASE("a header's entries are bounded and read in time linear in their number", "[io]") {
  TempDir dir;
  // Each entry ending made nlohmann's callback parser rescan the whole header object: 20,000 entries
  // took 11 s, 200,000 over 120 s to refuse, with a line per entry.
  const auto many = dir.file("many.safetensors");
  write_bytes(many, empty_tensors_file(st::kMaxHeaderEntries + 1));
  try {
    st::File f(many);
    FAIL("a header of more than kMaxHeaderEntries entries was accepted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == many + ": header has 100001 entries, more than the limit of 100000");
  }
  // Metadata is an entry of the header too.
  const auto with_metadata = dir.file("with_metadata.safetensors");
  std::string bytes = empty_tensors_file(st::kMaxHeaderEntries);
  bytes = make_file(R"({"__metadata__":{"k":"v"},)" + bytes.substr(9), "");
  write_bytes(with_metadata, bytes);
  CHECK_THROWS_WITH(st::File(with_metadata),
                    with_metadata + ": header has 100001 entries, more than the limit of 100000");
  // Many small tensors within the limit still load.
  const auto small = dir.file("small.safetensors");
  std::map<std::string, st::Array> tensors;
  for (int k = 0; k < 20'000; ++k) tensors["w" + std::to_string(k)] = xt::xarray<float>({float(k)});
  st::save_file(small, tensors);
  const st::File file(small);
  CHECK(file.names().size() == 20'000);
  CHECK(file.get<float>("w19999")(0) == 19999.0f);
}

TEST_CASE("hostile headers are refused with a short message naming the file", "[io]") {
  TempDir dir;
  const auto path = dir.file("hostile.safetensors");
  auto expect = [&](const std::string& bytes, const std::string& problem) { check_refused(path, bytes, problem); };
  const std::string f32x2 = std::string(8, '\0');
  // Nested 100,000 deep where the reader used to print the value with nlohmann's recursive dump().
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect(make_file(R"({"a": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 8]}})", f32x2),
         "deeper than 32 levels");
  expect(make_file(R"({"a": {"dtype": )" + deep + R"(, "shape": [2], "data_offsets": [0, 8]}})", f32x2),
         "deeper than 32 levels");
  expect(make_file(deep, ""), "deeper than 32 levels");
  // Numbers beyond double's range: nlohmann reports them as out_of_range, not as a parse error.
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 8]}})", f32x2),
         "header is not valid JSON");
  expect(make_file(R"({"__metadata__": {"k": -1e999}})", ""), "header is not valid JSON");
  // Long names and values are clipped in the message.
  const std::string long_name(1 << 20, 'x');
  expect(make_file("{\"" + long_name + R"(": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f32x2),
         "(1048576 bytes)");
  expect(
      make_file(R"({"a": {"dtype": "F32", "shape": [)" + std::string(1 << 20, '7') + R"(], "data_offsets": [0, 8]}})",
                f32x2),
      "header is not valid JSON");
  // A header length beyond the cap is refused before anything is allocated for it.
  expect(u64_le(st::kMaxHeaderBytes + 8) + "{}", "header length 100000008 exceeds the limit of 100000000 bytes");
  // A bool byte other than 0 and 1 is corruption.
  expect(make_file(R"({"m": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}})", std::string("\x01\x00\x02", 3)),
         "tensor \"m\": BOOL element 2 is byte 2, not 0 or 1");
  // Nesting up to the limit is still JSON the reader interprets (and rejects for what it says).
  expect(make_file(R"({"a": {"dtype": "F32", "shape": [[[1]]], "data_offsets": [0, 8]}})", f32x2),
         "shape [[[1]]] has an entry that is not a non-negative integer");
}

TEST_CASE("a truncated or corrupted file throws instead of crashing", "[io]") {
  TempDir dir;
  const auto good = dir.file("good.safetensors");
  st::save_file(good, check_tensors(), {{"a", "b"}});
  const std::string bytes = read_bytes(good);
  // Every proper prefix is invalid: the data must fill the file exactly.
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    const auto bad = write_fresh(dir, bytes.substr(0, len));
    INFO("prefix of " << len << " bytes");
    CHECK_THROWS_AS(st::File(bad), std::runtime_error);
    fs::remove(bad);
  }
  // Any byte of the length or header replaced by any of these values: a clean error or a valid file.
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  int loaded = 0, rejected = 0;
  for (std::size_t pos = 0; pos < 8 + header_len; ++pos) {
    for (const unsigned char v : {0x00, 0x01, 0x22, 0x30, 0x39, 0x5b, 0x7b, 0x7d, 0x80, 0xff}) {
      std::string corrupt = bytes;
      corrupt[pos] = static_cast<char>(v);
      const auto bad = write_fresh(dir, corrupt);
      try {
        const st::File f(bad);
        testing::read_every_tensor(f);
        ++loaded;
      } catch (const std::runtime_error& e) {
        ++rejected;
        CHECK_THAT(std::string(e.what()), Catch::StartsWith(bad));
      }
      fs::remove(bad);
    }
  }
  CHECK(rejected > 0);
  CHECK(loaded > 0);  // e.g. a changed digit inside a metadata value
}

TEST_CASE("load_state_dict copies into the target and reports every mismatch at once", "[io]") {
  TempDir dir;
  const auto path = dir.file("model.safetensors");
  st::save_file(path, {{"a", xt::xarray<double>({{1.0, 2.0}, {3.0, 4.0}})},
                       {"b", xt::xarray<std::int64_t>({1, 2, 3})},
                       {"c", xt::xarray<double>({1.0, 2.0, 3.0, 4.0, 5.0})},
                       {"extra", xt::xarray<double>({9.0})}});
  auto a = Tensor<double>::zeros({2, 2}, true);  // the "module's" parameters
  auto b = Tensor<double>::zeros({3});
  auto c = Tensor<double>::zeros({4});
  auto d = Tensor<double>::zeros({2});
  StateDict<double> target{{"a", a}, {"b", b}, {"c", c}, {"d", d}};
  const std::string m = testing::error_of([&] { st::load_state_dict(path, target); });
  CHECK_THAT(m, Catch::StartsWith(path));
  CHECK_THAT(m, Catch::Contains("4 problem(s)"));
  CHECK_THAT(m, Catch::Contains("\"b\" is I64 in the file, F64 in the model (only F16, BF16, F32 and F64 convert)"));
  CHECK_THAT(m, Catch::Contains("\"c\" has shape [5] in the file, [4] in the model"));
  CHECK_THAT(m, Catch::Contains("unexpected \"extra\""));
  CHECK_THAT(m, Catch::Contains("missing \"d\""));
  CHECK(a.data() == xt::xarray<double>({{0.0, 0.0}, {0.0, 0.0}}));  // nothing changed

  // strict = false ignores missing and unexpected names, not wrong shapes or dtypes.
  const std::string lenient = testing::error_of([&] { st::load_state_dict(path, target, false); });
  CHECK_THAT(lenient, Catch::Contains("2 problem(s)"));
  CHECK_THAT(lenient, !Catch::Contains("extra") && !Catch::Contains("\"d\""));
  StateDict<double> partial{{"a", a}, {"d", d}};
  st::load_state_dict(path, partial, false);
  CHECK(a.data() == xt::xarray<double>({{1.0, 2.0}, {3.0, 4.0}}));  // through the alias
  CHECK(a.requires_grad());
  CHECK(d.data() == xt::xarray<double>({0.0, 0.0}));
  CHECK_THROWS_WITH(st::load_state_dict(path, partial), Catch::Contains("unexpected \"b\""));
}

TEST_CASE("load_state_dict refuses NaN and infinite values, naming the tensor and the position", "[io]") {
  TempDir dir;
  const auto path = dir.file("model.safetensors");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  st::save_file(path, {{"w", xt::xarray<double>({1.0, nan, 3.0})}, {"ok", xt::xarray<double>({1.0})}});
  auto w = Tensor<double>::zeros({3});
  auto ok = Tensor<double>::zeros({1});
  StateDict<double> target{{"w", w}, {"ok", ok}};
  CHECK_THAT(testing::error_of([&] { st::load_state_dict(path, target, /*strict=*/false); }),
             Catch::StartsWith(path) && Catch::Contains("\"w\" holds nan at flat index 1"));
  CHECK(ok.data()(0) == 0.0);  // nothing loaded
  st::save_file(path, {{"b", xt::xarray<float>({2.0f, -std::numeric_limits<float>::infinity()})}});
  auto b = Tensor<float>::zeros({2});
  StateDict<float> fb{{"b", b}};
  CHECK_THROWS_WITH(st::load_state_dict(path, fb), Catch::Contains("\"b\" holds -inf at flat index 1"));
}

TEST_CASE("save_state_dict / load_state_dict round trip in float and double", "[io]") {
  TempDir dir;
  auto roundtrip = [&](auto zero) {
    using T = decltype(zero);
    Generator gen(7);
    StateDict<T> src{{"layer.weight", Tensor<T>::normal({3, 5}, T(0), T(1), gen)},
                     {"layer.bias", Tensor<T>::normal({5}, T(0), T(1), gen)},
                     {"scale", Tensor<T>::scalar(T(0.25))}};
    const auto path = dir.file("sd.safetensors");
    st::save_state_dict(path, src, {{"format", "pt"}});
    CHECK(st::File(path).dtype("scale") == st::dtype_of<T>());
    StateDict<T> dst{{"layer.weight", Tensor<T>::zeros({3, 5})},
                     {"layer.bias", Tensor<T>::zeros({5})},
                     {"scale", Tensor<T>::scalar(T(0))}};
    st::load_state_dict(path, dst);
    for (const auto& [name, t] : src) CHECK(dst.at(name).data() == t.data());
  };
  roundtrip(0.0f);
  roundtrip(0.0);
}

TEST_CASE("F16 and BF16 tensors read as float or double exactly, and load into a state_dict", "[io]") {
  TempDir dir;
  const auto path = dir.file("half.safetensors");
  // 1, -2, the smallest subnormal 2^-24, the largest finite 65504, +inf, the nearest half to 1/3.
  const std::vector<std::uint16_t> half{0x3c00, 0xc000, 0x0001, 0x7bff, 0x7c00, 0x3555};
  // 1, -3, 2^-133 (a float subnormal), the bfloat16 nearest pi.
  const std::vector<std::uint16_t> bf16{0x3f80, 0xc040, 0x0001, 0x4049};
  st::save_file(path, {{"h", st::TensorView{st::Dtype::F16, {2, 3}, half.data(), half.size() * 2}},
                       {"b", st::TensorView{st::Dtype::BF16, {4}, bf16.data(), bf16.size() * 2}},
                       {"i", st::view_of(xt::xarray<std::int64_t>({3}))}});
  const st::File f(path);
  const xt::xarray<double> h = f.get_as<double>("h");
  CHECK(Shape(h.shape().begin(), h.shape().end()) == Shape{2, 3});
  CHECK(h(0, 0) == 1.0);
  CHECK(h(0, 1) == -2.0);
  CHECK(h(0, 2) == std::ldexp(1.0, -24));
  CHECK(h(1, 0) == 65504.0);
  CHECK(h(1, 1) == std::numeric_limits<double>::infinity());
  CHECK(h(1, 2) == 0x1.554p-2);
  const xt::xarray<float> b = f.get_as<float>("b");
  CHECK(bool(b == xt::xarray<float>({1.0f, -3.0f, std::ldexp(1.0f, -133), 3.140625f})));
  CHECK(bool(f.get_as<float>("h") == xt::xarray<float>(xt::cast<float>(h))));
  CHECK_THROWS_WITH(f.get_as<float>("i"), Catch::Contains("half.safetensors") &&
                                              Catch::Contains("tensor \"i\" is I64, not a floating dtype"));

  // load_state_dict converts them as torch's copy_ does; the infinity is refused by name.
  StateDict<float> target{{"b", Tensor<float>::zeros({4})}};
  st::load_state_dict(f, target, /*strict=*/false);
  CHECK(bool(target.at("b").data() == b));
  StateDict<double> with_inf{{"h", Tensor<double>::zeros({2, 3})}};
  CHECK_THROWS_WITH(st::load_state_dict(f, with_inf, false), Catch::Contains("\"h\" holds inf at flat index 4"));
}

TEST_CASE("a failed write leaves the previous file intact", "[io]") {
  TempDir dir;
  const auto path = dir.file("keep.safetensors");
  st::save_file(path, {{"x", xt::xarray<double>({1.0, 2.0, 3.0})}});
  const std::string before = read_bytes(path);

  // A directory that does not exist.
  const auto nowhere = dir.file("no_such_dir/out.safetensors");
  CHECK_THROWS_WITH(st::save_file(nowhere, {{"x", xt::xarray<double>({1.0})}}),
                    Catch::Contains(nowhere) && Catch::Contains("cannot create temporary file"));

  // A bad argument is rejected before anything is written.
  CHECK_THROWS_AS(st::save_file(path, {{"__metadata__", xt::xarray<double>({1.0})}}), std::invalid_argument);
  CHECK(read_bytes(path) == before);

  // The disk "fills up" in the middle of the data: a file size limit makes write() fail with EFBIG.
  {
    struct rlimit old {};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto old_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 4096;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
    bool threw = false;
    std::string message;
    try {
      st::save_file(path, {{"big", xt::xarray<double>(xt::ones<double>({100000}))}});
    } catch (const std::runtime_error& e) {
      threw = true;
      message = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    CHECK(threw);
    CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("cannot write") &&
                            Catch::Contains("previous file is unchanged"));
  }
  CHECK(read_bytes(path) == before);
  CHECK((st::File(path).get<double>("x") == xt::xarray<double>({1.0, 2.0, 3.0})));
  // No temporary file is left behind.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path)) files.push_back(e.path().filename().string());
  CHECK(files == std::vector<std::string>{"keep.safetensors"});

  // A successful save replaces the file.
  st::save_file(path, {{"y", xt::xarray<double>({4.0})}});
  CHECK(st::File(path).names() == std::vector<std::string>{"y"});
}

TEST_CASE("a save removes the temporary files that killed saves to the same path left behind", "[io]") {
  TempDir dir;
  const auto path = dir.file("model.safetensors");
  const pid_t child = tapegrad::testing::exited_pid();
  const std::string dead = path + ".tmp." + std::to_string(child) + ".0";
  const std::string alive = path + ".tmp." + std::to_string(getppid()) + ".3";                  // a running process
  const std::string other = dir.file("other.safetensors.tmp." + std::to_string(child) + ".0");  // another path
  const std::string lookalike = path + ".tmp.notapid.0";
  for (const auto& f : {dead, alive, other, lookalike}) write_bytes(f, std::string(1000, 'x'));
  st::save_file(path, {{"x", xt::xarray<double>({1.0})}});
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(alive));
  CHECK(fs::exists(other));
  CHECK(fs::exists(lookalike));
  CHECK(st::File(path).names() == std::vector<std::string>{"x"});
}
