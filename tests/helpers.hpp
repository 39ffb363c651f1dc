// Shared test helpers: random tensors and token ids, arrays from lists, a gradcheck assertion that prints the failing
// element, a temporary folder removed at the end of the test, and the pid of a process that is gone.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad::testing {

// A fresh, empty folder under the system's temporary directory, removed with everything in it when
// the test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tapegrad-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The pid of a child process that has exited and been reaped: a temporary file named after it can only
// be the debris of a killed save.
inline pid_t exited_pid() {
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) ::_exit(0);
  if (::waitpid(child, nullptr, 0) != child) throw std::runtime_error("waitpid failed");
  return child;
}

// The message of the E that f() throws, for a test that checks parts of it; a failed check and a
// text no expected message contains when f throws none.
template <typename E = std::runtime_error, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL_CHECK("no exception of the expected type");
  return "(nothing thrown)";
}

// The inputs of a function under gradcheck.
using Inputs = std::vector<Tensor<double>>;

// One step of loss(model) on two models built alike from the same seed, one of them with activation
// checkpointing: the same loss and every parameter's gradient, bit for bit.
template <typename Model, typename Loss>
void check_same_step(Model& plain, Model& checkpointed, const Loss& loss) {
  plain.zero_grad();
  checkpointed.zero_grad();
  const auto a = loss(plain), b = loss(checkpointed);
  REQUIRE(a.item() == b.item());
  a.backward();
  b.backward();
  const auto p = plain.named_parameters(), c = checkpointed.named_parameters();
  REQUIRE(p.size() == c.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    INFO(p[i].first);
    REQUIRE(p[i].second.has_grad());
    REQUIRE(c[i].second.has_grad());
    CHECK(p[i].second.grad() == c[i].second.grad());
  }
}

// A model's options with the sizes tapegrad's token models name alike set (vocab_size, max_len, d_model,
// nhead, num_layers), the rest at their defaults: a small model of a test in one line.
template <typename Options>
Options sized(std::size_t vocab_size, std::size_t max_len, std::size_t d_model, std::size_t nhead,
              std::size_t num_layers) {
  Options o;
  o.vocab_size = vocab_size;
  o.max_len = max_len;
  o.d_model = d_model;
  o.nhead = nhead;
  o.num_layers = num_layers;
  return o;
}

// Runs f() at each thread count in turn (named in the test's messages), then restores the count the
// test started with, also when a check throws.
template <typename F>
void at_thread_counts(std::initializer_list<int> counts, F f) {
  struct Restore {
    int threads;
    ~Restore() { set_num_threads(threads); }
  } restore{get_num_threads()};
  for (int threads : counts) {
    INFO(threads << " thread(s)");
    set_num_threads(threads);
    f();
  }
}

// Checks that run() returns the same arrays, to the bit (NaN payloads and signed zeros included), at 1,
// 2 and 3 threads: how a kernel splits its work must not depend on the thread count.
inline void check_same_bits_at_any_thread_count(const std::function<std::vector<xt::xarray<float>>()>& run) {
  std::vector<xt::xarray<float>> first;
  at_thread_counts({1, 2, 3}, [&] {
    const std::vector<xt::xarray<float>> now = run();
    if (first.empty()) first = now;
    REQUIRE(now.size() == first.size());
    for (std::size_t i = 0; i < now.size(); ++i) {
      INFO("result " << i);
      CHECK((now[i].shape() == first[i].shape() &&
             std::memcmp(now[i].data(), first[i].data(), now[i].size() * sizeof(float)) == 0));
    }
  });
}

// A random double tensor that requires grad, values in [low, high).
inline Tensor<double> rand_input(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0) {
  Generator gen(seed);
  return Tensor<double>::uniform(shape, low, high, gen, /*requires_grad=*/true);
}

// Token ids [rows, length] drawn from 1 .. vocab - 1 (0 is left for padding), seeded.
inline xt::xarray<std::int64_t> random_ids(std::size_t rows, std::size_t length, std::size_t vocab,
                                           std::uint64_t seed) {
  Generator gen(seed);
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({rows, length});
  for (auto& id : ids) id = static_cast<std::int64_t>(1 + gen.randint(vocab - 1));
  return ids;
}

// True when every element of a and b agrees within atol + rtol * |b|, with the same shape.
template <typename T>
bool allclose(const xt::xarray<T>& a, const xt::xarray<T>& b, double rtol = 1e-5, double atol = 1e-8) {
  if (a.shape().size() != b.shape().size() || !std::equal(a.shape().begin(), a.shape().end(), b.shape().begin()))
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    if (std::isnan(x) != std::isnan(y)) return false;
    if (!std::isnan(x) && !(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

/// The values of a [shape] tensor read row-major from v, as an array.
inline xt::xarray<double> values(const std::vector<double>& v, const Shape& shape) {
  return Tensor<double>::from_vector(v, shape).data();
}

/// An index array of the given shape holding v row-major.
inline IndexArray ids(const std::vector<std::int64_t>& v, const Shape& shape) {
  IndexArray a = IndexArray::from_shape(shape);
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

// Checks that a message listing several problems names each of `parts`.
inline void check_names_each(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) CHECK_THAT(message, Catch::Contains(part));
}

}  // namespace tapegrad::testing

// gradcheck with the failure message shown by Catch2.
#define CHECK_GRADCHECK(f, inputs)                                \
  do {                                                            \
    const auto gc_result_ = ::tapegrad::gradcheck((f), (inputs)); \
    INFO(gc_result_.message);                                     \
    CHECK(gc_result_.ok);                                         \
  } while (0)
