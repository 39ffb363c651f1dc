// train_lm perplexity: a model folder's perplexity on the documents of a text file or on the IMDb
// validation reviews of one label, tokenized by its own tokenizer.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace lm {

struct PerplexityArgs {
  std::string run;
  std::string text;     // each non-empty line a document
  std::string reviews;  // pos | neg: the validation reviews of that label (train_imdb's split)
  std::string data;
  bool no_download = false;
  double valid_fraction = 0.1;
  std::int64_t seed = 0;     // of the split
  std::int64_t context = 0;  // tokens per document scored (its head); 0: the model's context
  std::int64_t batch_size = 4;
  std::int64_t threads = 2;
  std::string precision;  // empty: the run's (fp32 for a Hugging Face folder)
};

// Prints the mean loss per predicted token, the perplexity, the next-token accuracy and the counts.
int perplexity_command(const PerplexityArgs& args, std::ostream& out, std::ostream& err);

}  // namespace lm
