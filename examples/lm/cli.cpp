#include "examples/lm/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <utility>

#include "examples/common/command_line.hpp"
#include "examples/common/commands.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/lm/bench.hpp"
#include "examples/lm/config.hpp"
#include "examples/lm/data.hpp"
#include "examples/lm/export.hpp"
#include "examples/lm/finetune.hpp"
#include "examples/lm/generate.hpp"
#include "examples/lm/model.hpp"
#include "examples/lm/perplexity.hpp"
#include "examples/lm/report.hpp"
#include "examples/lm/train.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace lm {

namespace fs = std::filesystem;
namespace tt = tapegrad::train;

namespace {

bool given(const CLI::App& app, const std::string& flag) { return examples::given_on(app, flags().at(flag)); }

// A flag given on the command line that the chosen model does not have: refused rather than ignored.
std::optional<std::string> inapplicable_flag(const CLI::App& app, const Config& config) {
  if (config.arch == "llama") {
    for (const auto& [flag, why] :
         {std::pair{"--ff", "its SwiGLU width is --hidden"}, std::pair{"--activation", "its feed-forward is SwiGLU"},
          std::pair{"--pos", "it rotates queries and keys (RoPE)"}, std::pair{"--norm", "it is pre-norm (RMSNorm)"},
          std::pair{"--attn-dropout", "it has no dropout on the attention weights"}}) {
      if (given(app, flag)) return fmt::format("{} does not apply to --arch llama: {}", flag, why);
    }
  } else if (given(app, "--hidden")) {
    return fmt::format("--hidden is --arch llama's SwiGLU width; --arch {} has --ff", config.arch);
  }
  return std::nullopt;
}

// --resume: the saved config.json supplies every setting not given on the command line.
Config with_saved_settings(const CLI::App& app, const Config& config) {
  const tt::RunDirectory run(config.out, {kVocabFile});
  run.check_resumable({tt::RunDirectory::kConfig});
  return examples::with_saved_settings(flags(), app, config, read_config(run));
}

int train_command(const CLI::App& app, Config config, std::ostream& out, std::ostream& err, bool interactive,
                  const Parallel& parallel) {
  examples::settle_run_folder(tt::RunDirectory(config.out, {kVocabFile}), parallel, err);
  if (config.resume) {
    config = with_saved_settings(app, config);
  } else if (config.objective == "masked") {
    apply_masked_defaults(config, [&](const char* flag) { return given(app, flag); });
  }
  if (const auto problem = validate(config)) throw tt::UsageError(*problem);
  if (const auto problem = inapplicable_flag(app, config)) throw tt::UsageError(*problem);
  if (!config.data.empty() && !fs::exists(config.data)) {
    throw tt::UsageError(fmt::format("--data {} does not exist", config.data));
  }
  return examples::run_training(
      parallel, out, err, interactive,
      [&](std::ostream& o, std::ostream& e, bool bar) { return train(config, o, e, bar, {}, parallel).interrupted; },
      tt::RunDirectory(config.out, {kVocabFile}), [&] { return write_report(config.out); });
}

struct EvaluateArgs {
  std::string run, data;
  bool no_download = false;
  std::int64_t threads = 2;
  std::string precision;  // empty: the run's
};

// The validation loss and perplexity of a run's saved model, recomputed from the files.
int evaluate_command(const EvaluateArgs& a, std::ostream& out, std::ostream& err) {
  if (const auto problem = examples::threads_problem(a.threads)) throw tt::UsageError(*problem);
  if (const auto problem = examples::subcommand_precision_problem(a.precision)) throw tt::UsageError(*problem);
  if (!a.data.empty() && !fs::exists(a.data)) throw tt::UsageError(fmt::format("--data {} does not exist", a.data));
  tapegrad::set_num_threads(static_cast<int>(a.threads));
  LoadedRun run = load_run(a.run);
  const tapegrad::autocast precision(examples::subcommand_uses_bfloat16(a.precision, run.config.precision, err));
  Config config = run.config;
  config.no_download = a.no_download;
  if (!a.data.empty()) config.data = a.data;
  if (!config.data.empty() && !fs::exists(config.data)) config.data.clear();
  const Data data = prepare_data(config, run.vocab);
  err << fmt::format("data: {} ({}): {} validation reviews\n", data.path.string(), data.source, data.valid.size());
  const Validation v =
      validate(*run.model, run.model->module(), data.valid, static_cast<std::size_t>(run.config.batch_size));
  out << fmt::format(
      "valid: loss {:.4f}, perplexity {:.2f}, next-token accuracy {:.2f}% ({} reviews, {} tokens, {:.1f} s)\n", v.loss,
      v.perplexity, 100.0 * v.accuracy, data.valid.size(), v.tokens, v.seconds);
  if (run.model->causal()) {
    for (const auto& b : bigram_baselines(data)) {
      out << fmt::format("{}: loss {:.4f}, perplexity {:.2f}\n", b.name, b.loss, b.perplexity);
    }
  }
  return 0;
}

using FinetuneCheck = std::optional<std::string> (*)(const FinetuneConfig&);

// train_lm finetune: the settings checked (with --resume, the run's), then the run.
int finetune_command(const CLI::App& sub, FinetuneConfig config, std::ostream& out, std::ostream& err, bool interactive,
                     const Parallel& parallel) {
  examples::settle_run_folder(tt::RunDirectory(config.out), parallel, err);
  if (config.resume) {
    const tt::RunDirectory run(config.out);
    run.check_resumable({tt::RunDirectory::kConfig});
    config = examples::with_saved_settings(
        finetune_flags(), sub, config,
        examples::read_run_settings(finetune_flags(), run, static_cast<FinetuneCheck>(&validate)));
  }
  if (const auto problem = validate(config)) throw tt::UsageError(*problem);
  for (const auto& [flag, path] : {std::pair{"--from", config.from}, std::pair{"--text", config.text},
                                   std::pair{"--valid-text", config.valid_text}, std::pair{"--data", config.data}}) {
    if (!path.empty() && !fs::exists(path)) throw tt::UsageError(fmt::format("{} {} does not exist", flag, path));
  }
  return examples::run_training(
      parallel, out, err, interactive,
      [&](std::ostream& o, std::ostream& e, bool bar) { return finetune(config, o, e, bar).interrupted; },
      tt::RunDirectory(config.out), {});
}

CLI::App* add_bench(CLI::App& app, BenchArgs& a) {
  CLI::App* bench_app = app.add_subcommand(
      "bench", "generation speed of a causal run with and without the KV cache, at several context lengths");
  bench_app->add_option("--run", a.run, "run folder")->required();
  bench_app->add_option("--contexts", a.contexts, "tokens of context at the last new token")
      ->capture_default_str()
      ->delimiter(',');
  bench_app->add_option("--new-tokens", a.new_tokens, "new tokens per measurement (the prompt is the rest)")
      ->capture_default_str();
  bench_app->add_option("--repeats", a.repeats, "measurements per setting; the fastest is reported")
      ->capture_default_str();
  bench_app->add_option("--seed", a.seed, "seeds the prompt's random tokens")->capture_default_str();
  examples::add_threads_and_precision(*bench_app, a);
  return bench_app;
}

CLI::App* add_export(CLI::App& app, ExportArgs& a) {
  CLI::App* export_app = app.add_subcommand(
      "export", "write a run's model in Hugging Face's layout with its tokenizer, or a LoRA run's adapters in PEFT's");
  export_app->add_option("--run", a.run, "a train_lm run or a finetune run")->required();
  export_app->add_option("--out", a.out, "the folder to write")->required();
  export_app->add_flag("--adapter", a.adapter,
                       "the LoRA adapters alone (adapter_model.safetensors, adapter_config.json)");
  export_app->add_flag("--overwrite", a.overwrite, "replace a model or adapters in --out");
  return export_app;
}

CLI::App* add_perplexity(CLI::App& app, PerplexityArgs& a) {
  CLI::App* perplexity_app = app.add_subcommand(
      "perplexity", "perplexity of a model folder on a text file or on the validation reviews of one label");
  perplexity_app->add_option("--run", a.run, "a model folder: a train_lm or finetune run, or a Hugging Face folder")
      ->required();
  perplexity_app->add_option("--text", a.text, "a text file, each non-empty line a document");
  perplexity_app->add_option("--reviews", a.reviews, "or the IMDb validation reviews of one label: pos|neg");
  perplexity_app->add_option("--data", a.data, "aclImdb folder or .tar.gz (default: found)");
  perplexity_app->add_flag("--no-download", a.no_download, "fail instead of downloading the data");
  perplexity_app->add_option("--valid-fraction", a.valid_fraction, "share of train/ held out, as train_imdb's")
      ->capture_default_str();
  perplexity_app->add_option("--seed", a.seed, "the split's seed, as train_imdb's")->capture_default_str();
  perplexity_app->add_option("--context", a.context, "tokens per document scored (its head); 0: the model's")
      ->capture_default_str();
  perplexity_app->add_option("--batch-size", a.batch_size, "documents per batch")->capture_default_str();
  examples::add_threads_and_precision(*perplexity_app, a);
  return perplexity_app;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const Parallel& parallel) {
  CLI::App app(
      "Trains a Transformer language model on the text of the IMDb training reviews: a GPT or a Llama (causal,\n"
      "--arch) or a masked-token encoder that starts train_imdb's classifier (--init-from).\n"
      "With no subcommand it trains; `generate`, `evaluate`, `bench` and `report` use a finished run;\n"
      "`finetune` trains a pretrained model (a Hugging Face folder or a run) further, `export` writes a run in\n"
      "Hugging Face's layout, `perplexity` scores any of them on a text.",
      kProgram);
  app.require_subcommand(0, 1);
  Config config;
  flags().add_to(app, config);

  GenerateArgs gen;
  CLI::App* generate_app =
      app.add_subcommand("generate", "continue a prompt (the arguments, or stdin) with a causal run");
  generate_app->add_option("--run", gen.run, "a causal run, a finetune run or a Hugging Face folder")->required();
  generate_app->add_option("prompt", gen.prompt, "the prompt (its words are joined with spaces)");
  generate_app->add_option("--max-new-tokens", gen.max_new_tokens, "tokens to generate")->capture_default_str();
  generate_app->add_option("--temperature", gen.temperature, "softmax temperature; 0: greedy")->capture_default_str();
  generate_app->add_option("--top-k", gen.top_k, "sample among the k most likely tokens; 0: all")
      ->capture_default_str();
  generate_app->add_option("--top-p", gen.top_p, "sample among the most likely tokens holding this probability")
      ->capture_default_str();
  generate_app->add_option("--seed", gen.seed, "the same seed gives the same text")->capture_default_str();
  generate_app->add_flag("--no-cache", gen.no_cache, "re-run the whole sequence for every token (to compare)");
  generate_app->add_option("--prompt-tokens", gen.prompt_tokens, "keep only the prompt's last N tokens; 0: all")
      ->capture_default_str();
  examples::add_threads_and_precision(*generate_app, gen);

  EvaluateArgs eval_args;
  CLI::App* evaluate_app =
      app.add_subcommand("evaluate", "validation loss and perplexity of a run's model (and the bigram baselines)");
  evaluate_app->add_option("--run", eval_args.run, "run folder")->required();
  evaluate_app->add_option("--data", eval_args.data, "aclImdb folder or .tar.gz (default: the run's, else found)");
  evaluate_app->add_flag("--no-download", eval_args.no_download, "fail instead of downloading the data");
  examples::add_threads_and_precision(*evaluate_app, eval_args);

  BenchArgs bench;
  CLI::App* bench_app = add_bench(app, bench);

  FinetuneConfig finetune_config;
  CLI::App* finetune_app = app.add_subcommand(
      "finetune",
      "train a pretrained model further (every weight, or LoRA adapters) on a text file or one label's reviews");
  finetune_flags().add_to(*finetune_app, finetune_config);

  ExportArgs export_args;
  CLI::App* export_app = add_export(app, export_args);
  PerplexityArgs ppl;
  CLI::App* perplexity_app = add_perplexity(app, ppl);

  std::string report_run;
  CLI::App* report_app = app.add_subcommand("report", "an HTML page of a run's curves and settings (RUN/report.html)");
  report_app->add_option("--run", report_run, "run folder")->required();

  if (const auto code = examples::parse_command_line(app, argc, argv, out, err, kProgram)) return *code;
  return tt::exit_code_of(kProgram, err, [&] {
    CLI::App* command = nullptr;
    for (CLI::App* sub : {generate_app, evaluate_app, bench_app, report_app, finetune_app, export_app, perplexity_app})
      if (sub->parsed()) command = sub;
    if (!command) return train_command(app, config, out, err, interactive, parallel);
    examples::check_subcommand(app, *command, parallel);
    if (command == generate_app) return generate_command(gen, in, out, err);
    if (command == evaluate_app) return evaluate_command(eval_args, out, err);
    if (command == bench_app) return bench_command(bench, out, err);
    if (command == finetune_app)
      return finetune_command(*finetune_app, finetune_config, out, err, interactive, parallel);
    if (command == export_app) return export_command(export_args, out, err);
    if (command == perplexity_app) return perplexity_command(ppl, out, err);
    return examples::report_command(
        tt::RunDirectory(report_run), [&] { return write_report(report_run); }, out, err);
  });
}

}  // namespace lm
