// What the MPI benchmarks (bench_ddp, bench_zero) share: their command lines of whole numbers, and the
// synthetic classification batches they train on.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"

namespace bench {

// The sizes of a run: threads per rank (--threads), rows of a batch (--batch), tokens of a row (--len)
// and timed steps (--steps).
struct RunOptions {
  std::size_t threads, batch, len, steps;
};

// A flag of a program's own, "--name value", whose value, a whole number in [min, max], goes into field.
struct WholeFlag {
  const char* name;
  std::size_t* field;
  std::size_t min, max;
};

// Reads argv's "--name value" pairs into a copy of defaults, and the program's own flags into their
// fields; throws std::invalid_argument naming the program, the flag and the value for an unknown flag or
// a value out of its range.
inline RunOptions parse_flags(const char* program, int argc, char** argv, RunOptions defaults,
                              std::initializer_list<WholeFlag> own = {}) {
  RunOptions o = defaults;
  const std::size_t most = std::size_t{1} << 30;
  std::vector<WholeFlag> flags = {{"--threads", &o.threads, 1, 1024},
                                  {"--batch", &o.batch, 1, most},
                                  {"--len", &o.len, 1, most},
                                  {"--steps", &o.steps, 1, most}};
  flags.insert(flags.end(), own);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::stol(argv[i + 1]);
    bool known = false;
    for (const WholeFlag& f : flags) {
      if (flag != f.name) continue;
      if (value < 0 || static_cast<std::size_t>(value) < f.min || static_cast<std::size_t>(value) > f.max) {
        throw std::invalid_argument(
            fmt::format("{}: {} {} is out of range [{}, {}]", program, flag, value, f.min, f.max));
      }
      *f.field = static_cast<std::size_t>(value);
      known = true;
    }
    if (!known) throw std::invalid_argument(fmt::format("{}: unknown flag {}", program, flag));
  }
  return o;
}

// Reviews of random tokens for a two-class classifier, redrawn at every step: rows x len ids in
// [2, vocab_size) (0 and 1 stay the padding and unknown ids), no padding, labels 0 or 1.
struct SyntheticBatches {
  SyntheticBatches(std::size_t rows, std::size_t len, std::uint64_t seed)
      : gen(seed),
        ids(xt::zeros<std::int64_t>({rows, len})),
        padding(xt::zeros<bool>({rows, len})),
        labels(xt::zeros<std::int64_t>({rows})) {}

  void redraw(std::size_t vocab_size) {
    for (auto& id : ids) id = 2 + static_cast<std::int64_t>(gen.randint(vocab_size - 2));
    for (auto& l : labels) l = static_cast<std::int64_t>(gen.randint(2));
  }

  tapegrad::Generator gen;
  xt::xarray<std::int64_t> ids;
  xt::xarray<bool> padding;
  xt::xarray<std::int64_t> labels;
};

}  // namespace bench
