#include "examples/lm/model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>
#include <xtensor/xadapt.hpp>

#include "examples/common/commands.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/text/masking.hpp"
#include "tapegrad/datasets/text/next_token.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/run_directory.hpp"
#include "tapegrad/train/timing.hpp"

namespace lm {

namespace ds = tapegrad::datasets;
using tapegrad::Tensor;

namespace {

// Rows of logits [N, V] whose largest entry is at the target (ignored targets do not count).
std::size_t count_correct(const Tensor<float>& logits, const xt::xarray<std::int64_t>& targets) {
  const std::size_t v = logits.size(1);
  const float* p = logits.data().data();
  std::size_t correct = 0;
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const std::int64_t t = targets.data()[r];
    if (t < 0) continue;
    const float* row = p + r * v;
    std::size_t best = 0;
    for (std::size_t j = 1; j < v; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == static_cast<std::size_t>(t) ? 1 : 0;
  }
  return correct;
}

// Rows `rows` of a [B, L] array.
template <typename T>
xt::xarray<T> take(const xt::xarray<T>& a, const std::vector<std::size_t>& rows) {
  const std::size_t L = a.shape(1);
  xt::xarray<T> out = xt::xarray<T>::from_shape({rows.size(), L});
  for (std::size_t k = 0; k < rows.size(); ++k)
    std::copy(a.data() + rows[k] * L, a.data() + (rows[k] + 1) * L, out.data() + k * L);
  return out;
}

}  // namespace

LanguageModel::LanguageModel(const Config& config, const ds::Vocabulary& vocab, bool output_bias) : config_(config) {
  tapegrad::Generator gen(static_cast<std::uint64_t>(config.seed));
  if (config.objective == "causal" && config.arch == "llama") {
    llama_ = std::make_unique<tapegrad::models::Llama<float>>(llama_options(config, vocab.size()), gen);
    causal_ = llama_.get();
  } else if (config.objective == "causal") {
    gpt_ = std::make_unique<tapegrad::models::GPT<float>>(gpt_options(config, vocab.size(), output_bias), gen);
    causal_ = gpt_.get();
  } else {
    mask_id_ = vocab.mask_id();
    masked_ =
        std::make_unique<tapegrad::models::TransformerMaskedLM<float>>(encoder_options(config, vocab.size()), gen);
  }
}

tapegrad::nn::Module<float>& LanguageModel::module() {
  if (gpt_) return *gpt_;
  if (llama_) return *llama_;
  return *masked_;
}

const tapegrad::models::CausalLM<float>& LanguageModel::causal_lm() const {
  if (!causal_) throw std::logic_error("this run's model is the masked objective's encoder, not a causal model");
  return *causal_;
}

const tapegrad::models::GPT<float>& LanguageModel::gpt() const {
  if (!gpt_)
    throw std::logic_error(
        fmt::format("this run's model is {}, not a GPT", llama_ ? "a Llama" : "the masked objective's encoder"));
  return *gpt_;
}

LanguageModel::Loss LanguageModel::loss(const ds::Batch& batch, std::uint64_t draw,
                                        const std::vector<std::size_t>& rows) const {
  if (causal_) return causal_loss(*causal_, batch, rows);
  Loss out;
  // Drawn for the whole batch, so that a rank's rows are masked as in one process.
  const ds::MaskedTokens m = ds::mask_tokens(batch.ids, batch.padding_mask, mask_id_, masked_->options.vocab_size,
                                             ds::MaskingOptions{}, static_cast<std::uint64_t>(config_.seed), draw);
  auto [logits, targets] =
      rows.empty() ? masked_->predict(m.ids, batch.padding_mask, m.targets)
                   : masked_->predict(take(m.ids, rows), take(batch.padding_mask, rows), take(m.targets, rows));
  out.loss = tapegrad::cross_entropy(logits, targets);
  out.count = targets.size();
  out.correct = count_correct(logits, targets);
  return out;
}

namespace {

// Mean loss, perplexity and accuracy of `loss` over data's batches, in eval mode without recording.
template <typename LossOf>
Validation validate_with(tapegrad::nn::Module<float>& module, const ds::EncodedDataset& data, std::size_t batch_size,
                         const LossOf& loss) {
  const tapegrad::train::Stopwatch clock;
  tapegrad::NoGradGuard no_grad;
  module.eval();
  ds::BatchOptions options;
  options.batch_size = batch_size;
  options.shuffle = false;
  options.bucket_chunk = 1u << 20;  // one chunk: sorted by length
  options.trim = true;
  ds::DataLoader loader(data, options);
  Validation v;
  double nll = 0.0, correct = 0.0;
  for (std::size_t i = 0; i < loader.size(); ++i) {
    const LanguageModel::Loss l = loss(loader.batch(i), (std::uint64_t{1} << 32) + i);
    if (l.count == 0) continue;
    nll += static_cast<double>(l.loss.item()) * double(l.count);
    correct += double(l.correct);
    v.tokens += l.count;
  }
  v.loss = v.tokens ? nll / double(v.tokens) : std::nan("");
  v.perplexity = std::exp(v.loss);
  v.accuracy = v.tokens ? correct / double(v.tokens) : 0.0;
  v.seconds = clock.seconds();
  return v;
}

}  // namespace

LanguageModel::Loss causal_loss(const tapegrad::models::CausalLM<float>& model, const ds::Batch& batch,
                                const std::vector<std::size_t>& rows) {
  LanguageModel::Loss out;
  constexpr std::int64_t kIgnored = -100;
  const ds::NextTokenBatch next = ds::next_token_batch(rows.empty() ? batch : ds::take_rows(batch, rows), kIgnored);
  // Logits only where a target is (not at padding): the same loss, without the largest tensor's waste.
  std::vector<std::int64_t> positions, kept;
  for (std::size_t i = 0; i < next.targets.size(); ++i) {
    if (next.targets.data()[i] == kIgnored) continue;
    positions.push_back(static_cast<std::int64_t>(i));
    kept.push_back(next.targets.data()[i]);
  }
  const xt::xarray<std::int64_t> row_ids = xt::adapt(positions, {positions.size()});
  const xt::xarray<std::int64_t> targets = xt::adapt(kept, {kept.size()});
  const Tensor<float> flat = model.forward_rows(next.inputs, row_ids);
  out.loss = tapegrad::cross_entropy(flat, targets);
  out.count = next.count;
  out.correct = count_correct(flat, targets);
  return out;
}

tapegrad::train::Evaluation evaluation(const Validation& v, std::string summary) {
  tapegrad::train::Evaluation e;
  e.score = -v.loss;
  e.metrics = {{"valid_loss", v.loss}, {"valid_ppl", v.perplexity}, {"valid_acc", v.accuracy}};
  e.summary = std::move(summary);
  return e;
}

Validation validation_of(const nlohmann::json& metrics) {
  Validation v;
  v.loss = metrics.value("valid_loss", 0.0);
  v.perplexity = metrics.value("valid_ppl", 0.0);
  v.accuracy = metrics.value("valid_acc", 0.0);
  return v;
}

Validation validate(const LanguageModel& model, tapegrad::nn::Module<float>& module, const ds::EncodedDataset& data,
                    std::size_t batch_size) {
  return validate_with(module, data, batch_size,
                       [&](const ds::Batch& batch, std::uint64_t draw) { return model.loss(batch, draw); });
}

Validation validate_causal(const tapegrad::models::CausalLM<float>& model, tapegrad::nn::Module<float>& module,
                           const ds::EncodedDataset& data, std::size_t batch_size) {
  return validate_with(module, data, batch_size,
                       [&](const ds::Batch& batch, std::uint64_t) { return causal_loss(model, batch); });
}

bool has_output_bias(const std::filesystem::path& weights, const std::string& prefix) {
  return std::filesystem::exists(weights) &&
         tapegrad::io::safetensors::File(weights.string()).contains(prefix + "output_bias");
}

Config read_config(const tapegrad::train::RunDirectory& run) {
  return examples::read_run_settings(flags(), run, &validate);
}

LoadedRun load_run(const std::filesystem::path& dir) {
  const tapegrad::train::RunDirectory run(dir, {kVocabFile});
  run.check_has({tapegrad::train::RunDirectory::kConfig, kVocabFile, tapegrad::train::RunDirectory::kModel});
  run.check_files(run.model());
  LoadedRun loaded{read_config(run), ds::Vocabulary::load(run.file(kVocabFile)), nullptr};
  loaded.model = std::make_unique<LanguageModel>(loaded.config, loaded.vocab, has_output_bias(run.model()));
  tapegrad::train::load_model(run.model(), loaded.model->module());
  loaded.model->module().eval();
  return loaded;
}

LoadedRun load_causal_run(const std::filesystem::path& dir) {
  LoadedRun run = load_run(dir);
  if (!run.model->causal()) {
    throw tapegrad::train::UsageError(
        fmt::format("--run {} was trained with --objective {}: only a causal run generates text", dir.string(),
                    run.config.objective));
  }
  return run;
}

}  // namespace lm
