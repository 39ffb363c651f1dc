// The settings of a tiny train_translate run that the program tests share: a model that trains in
// milliseconds on 8-number batches, validated on 20 numbers and tested on 10, on one thread.
#pragma once

#include <string>
#include <vector>

namespace tapegrad::testing {

inline std::vector<std::string> translate_tiny_args(const std::string& steps, const std::string& eval_every) {
  return {"--d-model",
          "16",
          "--nhead",
          "2",
          "--num-encoder-layers",
          "1",
          "--num-decoder-layers",
          "1",
          "--dim-feedforward",
          "32",
          "--batch-size",
          "8",
          "--steps",
          steps,
          "--warmup",
          "2",
          "--eval-every",
          eval_every,
          "--valid-size",
          "20",
          "--test-size",
          "10",
          "--threads",
          "1"};
}

}  // namespace tapegrad::testing
