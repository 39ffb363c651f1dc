// The model of a language-model run, causal (GPT or Llama, --arch) or masked (the classifier's encoder
// with BERT's head), its loss on a batch, its validation, and a finished run read back from its folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "examples/lm/config.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/models/causal_lm.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/masked_lm.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace lm {

inline constexpr const char* kVocabFile = "vocab.txt";

class LanguageModel {
 public:
  // Freshly initialized, seeded with config.seed. vocab must hold <mask> for the masked objective.
  // output_bias: --arch gpt with a bias on the logits, for a run whose weights hold one (has_output_bias).
  LanguageModel(const Config& config, const tapegrad::datasets::Vocabulary& vocab, bool output_bias = false);

  tapegrad::nn::Module<float>& module();
  bool causal() const { return causal_ != nullptr; }
  // The causal model, GPT or Llama; throws std::logic_error for the masked objective.
  const tapegrad::models::CausalLM<float>& causal_lm() const;
  const tapegrad::models::GPT<float>& gpt() const;  // throws std::logic_error unless --arch gpt, causal

  struct Loss {
    tapegrad::Tensor<float> loss;  // mean negative log-likelihood over the targets
    std::size_t count = 0;         // targets
    std::size_t correct = 0;       // targets whose most likely token is the right one
  };
  // Causal: every token after the first of each review, predicted from those before it. Masked: the
  // tokens mask_tokens chose, drawn with (seed, draw). `rows`: only those rows of the batch (one rank's
  // part of a global batch), masked as part of the whole batch; empty: all of them.
  Loss loss(const tapegrad::datasets::Batch& batch, std::uint64_t draw,
            const std::vector<std::size_t>& rows = {}) const;

 private:
  Config config_;
  std::int64_t mask_id_ = -1;
  std::unique_ptr<tapegrad::models::GPT<float>> gpt_;
  std::unique_ptr<tapegrad::models::Llama<float>> llama_;
  const tapegrad::models::CausalLM<float>* causal_ = nullptr;  // gpt_ or llama_
  std::unique_ptr<tapegrad::models::TransformerMaskedLM<float>> masked_;
};

struct Validation {
  double loss = 0.0;        // mean negative log-likelihood per target token (nats)
  double perplexity = 0.0;  // exp(loss)
  double accuracy = 0.0;    // of the most likely token
  std::size_t tokens = 0;   // targets
  double seconds = 0.0;
};
// v as the training loop keeps a validation: scored by its loss (lower is better), recorded in
// metrics.jsonl as "valid_loss", "valid_ppl" and "valid_acc", and `summary` on the progress line.
tapegrad::train::Evaluation evaluation(const Validation& v, std::string summary);
// The validation an evaluation's metrics record (TrainerResult::best_metrics).
Validation validation_of(const nlohmann::json& metrics);
// Over all of data in eval mode without recording, batch by batch (length-sorted, so little padding).
// The masked objective masks batch i with the draw 2^32 + i of the run's seed: the same targets at
// every validation.
Validation validate(const LanguageModel& model, tapegrad::nn::Module<float>& module,
                    const tapegrad::datasets::EncodedDataset& data, std::size_t batch_size);

// The causal loss of `model` on a batch (LanguageModel::loss of a causal model): every token after the
// first of each row, predicted from those before it; `rows`: only those rows; empty: all.
LanguageModel::Loss causal_loss(const tapegrad::models::CausalLM<float>& model, const tapegrad::datasets::Batch& batch,
                                const std::vector<std::size_t>& rows = {});
// validate() for any causal model (a pretrained one, a fine-tuned one): module is model.
Validation validate_causal(const tapegrad::models::CausalLM<float>& model, tapegrad::nn::Module<float>& module,
                           const tapegrad::datasets::EncodedDataset& data, std::size_t batch_size);

// Whether the GPT whose weights a file holds has a bias on its logits: it holds `prefix`output_bias
// (prefix "model." in a training checkpoint). train_lm's GPT has none, as GPT-2's; the runs whose GPT
// has one are rebuilt with it, so that they load, resume and fine-tune as they were trained. A missing
// file: false (its loading then says what is missing).
bool has_output_bias(const std::filesystem::path& weights, const std::string& prefix = "");

struct LoadedRun {
  Config config;
  tapegrad::datasets::Vocabulary vocab;
  std::unique_ptr<LanguageModel> model;  // model.safetensors loaded, in eval mode
};
// Throws train::UsageError for a folder without the files, std::runtime_error for bad ones.
LoadedRun load_run(const std::filesystem::path& dir);
// load_run for the subcommands that generate text: throws train::UsageError naming a masked run's objective.
LoadedRun load_causal_run(const std::filesystem::path& dir);
// A run's config.json, read strictly and validated; throws std::runtime_error naming the file and the
// key or setting at fault.
Config read_config(const tapegrad::train::RunDirectory& run);

}  // namespace lm
