// The settings of tiny runs that the program tests share: models that train in milliseconds on the
// 12-review fixture (train_imdb, train_lm) or on 8-number batches (train_translate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/imdb/config.hpp"
#include "examples/lm/config.hpp"
#include "examples/translate/config.hpp"

namespace tapegrad::testing {

/// The 12-review fixture (6 of each class in each split) the text programs' tests train on.
inline std::string tiny_reviews() { return std::string(TAPEGRAD_TEST_DATA_DIR) + "/aclImdb_small"; }

/// A text model that train_imdb and train_lm both take: 8 wide, 2 heads, a feed-forward of 16, a
/// 50-word vocabulary, 2 reviews a batch, on the fixture.
inline std::vector<std::string> text_tiny_args() {
  return {"--data",       tiny_reviews(), "--no-download", "--d-model", "8", "--heads", "2", "--ff", "16",
          "--vocab-size", "50",           "--batch-size",  "2"};
}

/// A train_lm run of one 16-wide layer over 48-token contexts with a 60-word vocabulary, validated on a
/// third of the fixture's reviews, on one thread.
inline std::vector<std::string> lm_tiny_args(const std::string& steps, const std::string& eval_every) {
  return {"--data",
          tiny_reviews(),
          "--no-download",
          "--vocab-size",
          "60",
          "--context",
          "48",
          "--layers",
          "1",
          "--d-model",
          "16",
          "--heads",
          "2",
          "--ff",
          "32",
          "--batch-size",
          "2",
          "--steps",
          steps,
          "--eval-every",
          eval_every,
          "--warmup",
          "1",
          "--lr",
          "0.01",
          "--valid-fraction",
          "0.34",
          "--threads",
          "1"};
}

/// A train_translate run: 16 wide, one layer each side, 8-number batches, validated on 20 numbers and
/// tested on 10, on one thread.
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

/// text_tiny_args as a Config of train_imdb or train_lm (the fields they name alike), with a third of the
/// fixture held out for validation, one warmup step, on one thread.
template <typename Config>
Config text_tiny_config() {
  Config c;
  c.data = tiny_reviews();
  c.no_download = true;
  c.d_model = 8;
  c.heads = 2;
  c.ff = 16;
  c.vocab_size = 50;
  c.batch_size = 2;
  c.valid_fraction = 0.34;
  c.warmup = 1;
  c.threads = 1;
  return c;
}

/// text_tiny_config as train_imdb's in-process tests pass it, with reviews cut at 32 words.
inline imdb::Config imdb_tiny_config() {
  auto c = text_tiny_config<imdb::Config>();
  c.max_len = 32;
  return c;
}

/// lm_tiny_args as the Config train_lm's in-process tests pass (without its --lr).
inline lm::Config lm_tiny_config(std::int64_t steps, std::int64_t eval_every) {
  auto c = text_tiny_config<lm::Config>();
  c.vocab_size = 60;
  c.context = 48;
  c.layers = 1;
  c.d_model = 16;
  c.ff = 32;
  c.steps = steps;
  c.eval_every = eval_every;
  return c;
}

/// translate_tiny_args as the Config train_translate's in-process tests pass.
inline translate::Config translate_tiny_config(std::int64_t steps, std::int64_t eval_every) {
  translate::Config c;
  c.d_model = 16;
  c.nhead = 2;
  c.num_encoder_layers = c.num_decoder_layers = 1;
  c.dim_feedforward = 32;
  c.batch_size = 8;
  c.steps = steps;
  c.warmup = 2;
  c.eval_every = eval_every;
  c.valid_size = 20;
  c.test_size = 10;
  c.threads = 1;
  return c;
}

}  // namespace tapegrad::testing
