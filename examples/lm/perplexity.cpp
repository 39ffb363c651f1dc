#include "examples/lm/perplexity.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/lm/finetune.hpp"
#include "examples/lm/model_folder.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/train/errors.hpp"

namespace lm {

namespace tt = tapegrad::train;

int perplexity_command(const PerplexityArgs& a, std::ostream& out, std::ostream& err) {
  if (!(a.valid_fraction > 0 && a.valid_fraction < 1)) {
    throw tt::UsageError(fmt::format("--valid-fraction {} is outside (0, 1)", a.valid_fraction));
  }
  if (a.seed < 0) throw tt::UsageError(fmt::format("--seed {} must not be negative", a.seed));
  if (a.context != 0 && a.context < 2) {
    throw tt::UsageError(fmt::format("--context {} must be 0 or at least 2", a.context));
  }
  namespace lim = examples::limits;
  if (a.context > lim::kSequenceLength) {
    throw tt::UsageError(fmt::format("--context {} is above the limit of {}", a.context, lim::kSequenceLength));
  }
  if (a.batch_size < 1) throw tt::UsageError(fmt::format("--batch-size {} must be positive", a.batch_size));
  if (a.batch_size > lim::kBatchSize) {
    throw tt::UsageError(fmt::format("--batch-size {} is above the limit of {}", a.batch_size, lim::kBatchSize));
  }
  if (const auto problem = examples::threads_problem(a.threads)) throw tt::UsageError(*problem);
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw tt::UsageError(*problem);
  for (const auto& [flag, path] :
       {std::pair{"--run", a.run}, std::pair{"--text", a.text}, std::pair{"--data", a.data}}) {
    if (!path.empty() && !std::filesystem::exists(path)) {
      throw tt::UsageError(fmt::format("{} {} does not exist", flag, path));
    }
  }
  if (a.text.empty() == a.reviews.empty()) {
    throw tt::UsageError(a.text.empty() ? "give the text to score: --text FILE or --reviews pos|neg"
                                        : "--text and --reviews: give one of them");
  }
  if (!a.reviews.empty() && a.reviews != "pos" && a.reviews != "neg") {
    throw tt::UsageError(fmt::format("--reviews {} is not one of pos|neg", a.reviews));
  }
  tapegrad::set_num_threads(static_cast<int>(a.threads));
  ModelFolder f = load_model_folder(a.run);
  const std::size_t context = f.model->max_len();
  if (a.context > static_cast<std::int64_t>(context)) {
    throw tt::UsageError(fmt::format("--context {} is beyond the model's context of {}", a.context, context));
  }
  const std::size_t max_len = (a.context ? static_cast<std::size_t>(a.context) : context) + 1;
  const tapegrad::autocast precision(examples::subcommand_uses_bfloat16(a.precision, f.precision, err));
  std::string what;
  tapegrad::datasets::EncodedDataset docs;
  if (!a.text.empty()) {
    docs = encode_text_file(a.text, *f.tokenizer, max_len);
    what = a.text;
  } else {
    const LabelReviews r = read_label_reviews(a.data, a.no_download, a.reviews, a.valid_fraction, a.seed);
    docs = encode_texts(r.valid, *f.tokenizer, max_len);
    what = fmt::format("the {} validation reviews of {}", a.reviews, r.source);
  }
  const Validation v = validate_causal(*f.model, *f.module, docs, static_cast<std::size_t>(a.batch_size));
  out << fmt::format(
      "perplexity {:.2f}: loss {:.4f}, next-token accuracy {:.2f}% ({} documents, {} tokens predicted, {} tokens "
      "each at most; {}; {:.1f} s)\n",
      v.perplexity, v.loss, 100.0 * v.accuracy, docs.size(), v.tokens, max_len, what, v.seconds);
  return 0;
}

}  // namespace lm
