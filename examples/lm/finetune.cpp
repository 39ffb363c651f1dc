#include "examples/lm/finetune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <numeric>

#include "examples/common/batching.hpp"
#include "examples/common/commands.hpp"
#include "examples/common/imdb_data.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/trainer_options.hpp"
#include "examples/lm/model_folder.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/imdb/locate.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/split.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace lm {

namespace fs = std::filesystem;
namespace ds = tapegrad::datasets;
namespace tt = tapegrad::train;

namespace {

std::vector<std::string> read_lines(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw tt::UsageError(fmt::format("{} {}: cannot open for reading", flag, path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r\f\v") != std::string::npos) lines.push_back(line);
  }
  if (in.bad()) throw std::runtime_error(fmt::format("{}: cannot read", path));
  return lines;
}

ds::EncodedDataset choose(const ds::EncodedDataset& data, std::int64_t count, std::int64_t seed) {
  const auto n = static_cast<std::size_t>(count);
  if (n == 0 || n >= data.size()) return data;
  // Its own stream ("valid" in ASCII), as train_lm's validation subset.
  tapegrad::Generator gen(static_cast<std::uint64_t>(seed) ^ 0x76616c6964ULL);
  std::vector<std::size_t> order = gen.permutation(data.size());
  order.resize(n);
  std::sort(order.begin(), order.end());
  return ds::EncodedDataset::encode_texts(
      data.size(), [](std::size_t) { return std::string_view(); }, [](std::size_t) { return std::int64_t{0}; }, order,
      [&, next = std::size_t{0}](std::string_view, std::vector<std::int64_t>& ids) mutable {
        const std::size_t i = order[next++];
        ids.insert(ids.end(), data.ids(i), data.ids(i) + data.length(i));
      },
      data.max_len());
}

}  // namespace

ds::EncodedDataset encode_texts(const std::vector<std::string>& texts, const TextTokenizer& tokenizer,
                                std::size_t max_len) {
  std::vector<std::vector<std::int64_t>> encoded(texts.size());
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    encoded[i] = tokenizer.encode(texts[i]);
    if (encoded[i].size() >= 2) usable.push_back(i);
  }
  // The ids are asked for in the order of `usable`.
  std::size_t next = 0;
  return ds::EncodedDataset::encode_texts(
      texts.size(), [&](std::size_t i) { return std::string_view(texts[i]); },
      [](std::size_t) { return std::int64_t{0}; }, usable,
      [&](std::string_view, std::vector<std::int64_t>& ids) {
        const auto& more = encoded[usable[next++]];
        ids.insert(ids.end(), more.begin(), more.end());
      },
      max_len);
}

ds::EncodedDataset encode_text_file(const std::string& path, const TextTokenizer& tokenizer, std::size_t max_len) {
  const auto lines = read_lines(path, "--text");
  ds::EncodedDataset data = encode_texts(lines, tokenizer, max_len);
  if (data.size() == 0) {
    throw std::runtime_error(
        fmt::format("{}: none of its {} non-empty lines has the 2 tokens a language model needs", path, lines.size()));
  }
  return data;
}

LabelReviews read_label_reviews(const std::string& data, bool no_download, const std::string& label,
                                double valid_fraction, std::int64_t seed) {
  const ds::Located located = ds::locate_imdb(examples::imdb_locate_options(data, no_download));
  const ds::ImdbData reviews = ds::read_imdb(located.path, ds::ImdbSplits::TrainOnly);
  const auto split = ds::train_valid_split(reviews.train, valid_fraction, static_cast<std::uint64_t>(seed));
  const std::int64_t wanted = label == "pos" ? 1 : 0;
  LabelReviews out;
  for (std::size_t i : split.train)
    if (reviews.train[i].label == wanted) out.train.push_back(reviews.train[i].text);
  for (std::size_t i : split.valid)
    if (reviews.train[i].label == wanted) out.valid.push_back(reviews.train[i].text);
  out.source = fmt::format("{} ({})", located.path.string(), located.source);
  return out;
}

Documents prepare_documents(const FinetuneConfig& c, const TextTokenizer& tokenizer, std::size_t max_len) {
  Documents d;
  if (!c.reviews.empty()) {
    const LabelReviews r = read_label_reviews(c.data, c.no_download, c.reviews, c.valid_fraction, c.seed);
    d.train = encode_texts(r.train, tokenizer, max_len);
    d.valid = encode_texts(r.valid, tokenizer, max_len);
    d.source = fmt::format("the {} training reviews of {}: {} to train on, {} to validate", c.reviews, r.source,
                           d.train.size(), d.valid.size());
  } else {
    std::vector<std::string> lines = read_lines(c.text, "--text"), train, valid;
    if (!c.valid_text.empty()) {
      train = std::move(lines);
      valid = read_lines(c.valid_text, "--valid-text");
    } else {
      for (std::size_t i = 0; i < lines.size(); ++i) (i % 10 == 9 ? valid : train).push_back(std::move(lines[i]));
    }
    d.train = encode_texts(train, tokenizer, max_len);
    d.valid = encode_texts(valid, tokenizer, max_len);
    d.source = fmt::format("{}: {} documents to train on, {} to validate{}", c.text, d.train.size(), d.valid.size(),
                           c.valid_text.empty() ? " (every 10th)" : " (" + c.valid_text + ")");
  }
  if (d.train.size() == 0 || d.valid.size() == 0) {
    throw std::runtime_error(fmt::format("{}: no {} document has the 2 tokens a language model needs", d.source,
                                         d.train.size() == 0 ? "training" : "validation"));
  }
  d.valid_sample = choose(d.valid, c.valid_reviews, c.seed);
  return d;
}

namespace {

// The model with its adapters (if any) and the documents, said on progress.
struct Prepared {
  ModelFolder folder;
  Documents docs;
};
Prepared prepare(const FinetuneConfig& config, tt::Progress& progress) {
  Prepared p{load_model_folder(config.from), {}};
  if (p.folder.kind == ModelFolder::Kind::finetune_run) {
    throw tt::UsageError(fmt::format("--from {} is a fine-tuning run: export it first (train_lm export)", config.from));
  }
  prepare_finetuning(p.folder, config);
  const std::size_t context = p.folder.model->max_len();
  if (config.context > static_cast<std::int64_t>(context)) {
    throw tt::UsageError(fmt::format("--context {} is beyond the model's context of {}", config.context, context));
  }
  const std::size_t max_len = (config.context ? static_cast<std::size_t>(config.context) : context) + 1;
  p.docs = prepare_documents(config, *p.folder.tokenizer, max_len);
  progress.message(fmt::format("model: {} from {}, tokenizer {}; {}", p.folder.module->name(), config.from,
                               p.folder.tokenizer->description(), p.docs.source));
  return p;
}

// The training step (the causal loss of a micro-batch of the shuffled passes over the documents) and the
// validation (the loss on the validation sample).
tt::TrainerHooks<float> hooks_for(const Prepared& p, const FinetuneConfig& config) {
  auto loader = std::make_shared<ds::DataLoader>(p.docs.train, examples::batch_options(config));
  auto epoch = std::make_shared<std::uint64_t>(0);
  const auto batch_size = static_cast<std::size_t>(config.batch_size);
  tt::TrainerHooks<float> hooks;
  hooks.forward = [&p, loader, epoch](std::int64_t step, std::int64_t, const tt::MicroBatch& micro) {
    const auto s = static_cast<std::size_t>(step);
    if (s / loader->size() != *epoch) {
      *epoch = s / loader->size();
      loader->set_epoch(*epoch);
    }
    const ds::Batch batch = loader->batch(s % loader->size());
    std::vector<std::size_t> all(batch.indices.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    const std::vector<std::size_t> rows = tt::micro_batch_rows(all, micro);
    const auto loss = causal_loss(*p.folder.model, batch, micro.count == 1 ? std::vector<std::size_t>{} : rows);
    tt::StepOutput<float> o;
    o.loss = loss.loss;
    o.count = double(loss.count);
    o.correct = double(loss.correct);
    for (std::size_t r : rows) o.tokens += double(p.docs.train.length(batch.indices[r]));
    return o;
  };
  hooks.validate = [&p, batch_size] {
    const Validation v = validate_causal(*p.folder.model, *p.folder.module, p.docs.valid_sample, batch_size);
    return evaluation(v, fmt::format("valid loss {:.4f} ppl {:.2f}", v.loss, v.perplexity));
  };
  return hooks;
}

}  // namespace

FinetuneResult finetune(const FinetuneConfig& settings, std::ostream& out, std::ostream& log, bool interactive,
                        const std::function<bool(std::int64_t)>& stop_after_step) {
  const tt::RunDirectory run(settings.out);
  tt::Progress progress(log, interactive, static_cast<std::size_t>(settings.log_every));
  const FinetuneConfig config = examples::start_training(
      finetune_flags(), settings, run, {tt::RunDirectory::kConfig, tt::RunDirectory::kCheckpoint}, &validate, progress);
  const Prepared p = prepare(config, progress);
  auto& module = *p.folder.module;

  FinetuneResult result;
  const auto trainable = tapegrad::nn::trainable_parameters(module);
  for (const auto& t : trainable) result.trained_parameters += t.numel();
  result.parameters = module.num_parameters();
  progress.message(fmt::format(
      "{}: {} of {} parameters trained ({:.2f}%); {} steps of {} documents",
      config.lora_rank
          ? fmt::format("LoRA r {} alpha {} on {}", config.lora_rank, config.lora_alpha, config.lora_targets)
          : std::string("full fine-tuning"),
      result.trained_parameters, result.parameters,
      100.0 * double(result.trained_parameters) / double(result.parameters), config.steps, config.batch_size));
  tapegrad::optim::AdamWOptions adamw;
  adamw.lr = config.lr;
  adamw.weight_decay = config.weight_decay;
  tapegrad::optim::AdamW<float> optimizer(trainable, adamw);
  if (!config.resume) {
    examples::start_run_folder(run, config.overwrite, to_json(config), progress);
    const tapegrad::autocast precision(config.precision_resolved == "bf16");
    result.before =
        validate_causal(*p.folder.model, module, p.docs.valid_sample, static_cast<std::size_t>(config.batch_size));
    progress.message(fmt::format("before fine-tuning: valid loss {:.4f} ppl {:.2f} ({} documents)", result.before.loss,
                                 result.before.perplexity, p.docs.valid_sample.size()));
  }
  tt::TrainerOptions options = examples::trainer_options(
      config, 1, config.steps, tapegrad::optim::CosineDecay(config.lr, config.steps, config.warmup), stop_after_step);
  options.eval_every = config.eval_every;
  tt::Trainer<float> trainer(run, module, optimizer, options, hooks_for(p, config), progress);
  if (!config.resume) {
    trainer.metrics().write({{"step", 0},
                             {"valid_loss", result.before.loss},
                             {"valid_ppl", result.before.perplexity},
                             {"trained_parameters", result.trained_parameters},
                             {"parameters", result.parameters}});
  }
  const tt::TrainerResult r = trainer.run();
  result.interrupted = r.interrupted;
  result.steps = r.step;
  result.best_step = r.best_step;
  result.train_seconds = r.train_seconds;
  if (r.best_step > 0) result.best = validation_of(r.best_metrics);
  if (!r.interrupted) {
    out << fmt::format("best validation (step {}, {} documents): loss {:.4f}, perplexity {:.2f}\n", result.best_step,
                       p.docs.valid_sample.size(), result.best.loss, result.best.perplexity);
    out << fmt::format("training: {:.1f} s\n", result.train_seconds);
  }
  return result;
}

}  // namespace lm
