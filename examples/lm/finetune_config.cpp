#include "examples/lm/finetune_config.hpp"

#include <fmt/format.h>

#include <sstream>

#include "examples/common/commands.hpp"
#include "examples/common/memory_flags.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/lm/training_flags.hpp"

namespace lm {

namespace {

namespace lim = examples::limits;
using examples::flag;

examples::Flags<FinetuneConfig> make_flags() {
  using C = FinetuneConfig;
  return {"train_lm finetune",
          kFinetuneConfigVersion,
          examples::Keys::dashes,
          {{"Model and text",
            {flag("--from", &C::from,
                  "the pretrained model: a Hugging Face folder (config.json, model.safetensors, tokenizer files) or a "
                  "train_lm run folder")
                 .shown_as("(required)")
                 .free_on_resume(),
             flag("--text", &C::text, "a text file to fine-tune on, each non-empty line a document").free_on_resume(),
             flag("--valid-text", &C::valid_text,
                  "the validation documents, a line each (default: every 10th document of --text)")
                 .free_on_resume(),
             flag("--reviews", &C::reviews, "or the IMDb training reviews of one label: pos|neg"),
             flag("--data", &C::data,
                  "aclImdb folder or .tar.gz for --reviews (default: found as datasets/README.md "
                  "describes)")
                 .shown_as("found")
                 .free_on_resume(),
             flag("--no-download", &C::no_download, "fail instead of downloading the data").not_saved(),
             flag("--valid-fraction", &C::valid_fraction,
                  "--reviews: share of train/ held out, as train_imdb's (seeded); its reviews of the label validate")
                 .in(examples::between(0, 1)),
             flag("--valid-reviews", &C::valid_reviews,
                  "validation documents scored at each validation, a fixed seeded subset (0: all)")
                 .in(examples::closed(0, lim::kSteps)),
             flag("--context", &C::context, "tokens per document the model sees (its head; 0: the model's context)")
                 .in(examples::zero_or(2, lim::kSequenceLength))}},
           {"LoRA (--lora-rank 0: full fine-tuning)",
            {flag("--lora-rank", &C::lora_rank, "rank r of the adapters (0: train every weight instead)")
                 .in(examples::closed(0, lim::kWidth)),
             flag("--lora-alpha", &C::lora_alpha, "the adapters' scaling is alpha / r").in(examples::above(0)),
             flag("--lora-dropout", &C::lora_dropout, "dropout on the adapters' input").in(examples::below(0, 1)),
             flag("--lora-targets", &C::lora_targets,
                  "the layers adapted, by PEFT's names, comma-separated (Llama: q_proj,k_proj,v_proj,o_proj,"
                  "gate_proj,up_proj,down_proj; GPT-2: c_attn,c_proj,c_fc)")}},
           optimization_flags<C>({"documents per step", "optimizer steps",
                                  "seeds the split (as train_imdb's), the adapters, the order and dropout"}),
           run_flag_group<C>({examples::saved("kind", &C::kind)})}};
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.emplace_back();
  return parts;
}

}  // namespace

const examples::Flags<FinetuneConfig>& finetune_flags() {
  static const examples::Flags<FinetuneConfig> table = make_flags();
  return table;
}

std::optional<std::string> validate(const FinetuneConfig& c) {
  if (auto problem = finetune_flags().check(c)) return problem;
  if (c.kind != FinetuneConfig().kind) return fmt::format("\"kind\" is \"{}\", not \"finetune\"", c.kind);
  if (c.from.empty()) return std::string("--from is required: the pretrained model's folder");
  if (c.text.empty() == c.reviews.empty()) {
    return c.text.empty() ? std::string("give the text to fine-tune on: --text FILE or --reviews pos|neg")
                          : fmt::format("--text {} and --reviews {}: give one of them", c.text, c.reviews);
  }
  if (!c.reviews.empty() && c.reviews != "pos" && c.reviews != "neg") {
    return fmt::format("--reviews {} is not one of pos|neg", c.reviews);
  }
  if (!c.valid_text.empty() && c.text.empty()) return std::string("--valid-text goes with --text");
  if (auto problem = examples::accumulate_problem(c.accumulate, c.batch_size)) return problem;
  if (c.warmup >= c.steps) return fmt::format("--warmup {} must be less than --steps {}", c.warmup, c.steps);
  if (auto problem = examples::decoupled_decay_problem(c.lr, c.weight_decay)) return problem;
  if (c.lora_rank > 0) {
    for (const std::string& target : split_commas(c.lora_targets)) {
      if (target.empty()) return fmt::format("--lora-targets \"{}\" names an empty module", c.lora_targets);
    }
  }
  return examples::precision_problem(c.precision, c.precision_resolved);
}

nlohmann::json to_json(const FinetuneConfig& c) { return finetune_flags().to_json(c); }

FinetuneConfig finetune_config_from_json(const nlohmann::json& json) { return finetune_flags().from_json(json); }

bool is_finetune_config(const nlohmann::json& json) {
  return json.is_object() && json.contains("kind") && json["kind"] == FinetuneConfig().kind;
}

tapegrad::nn::LoraConfig lora_config(const FinetuneConfig& c) {
  tapegrad::nn::LoraConfig lora;
  lora.r = static_cast<std::size_t>(c.lora_rank);
  lora.lora_alpha = c.lora_alpha;
  lora.lora_dropout = c.lora_dropout;
  lora.target_modules = split_commas(c.lora_targets);
  return lora;
}

}  // namespace lm
