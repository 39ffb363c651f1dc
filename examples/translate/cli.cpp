#include "examples/translate/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/common/command_line.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/translate/config.hpp"
#include "examples/translate/report.hpp"
#include "examples/translate/training.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/interrupt.hpp"

namespace translate {

namespace fs = std::filesystem;
namespace tr = tapegrad::train;
using tr::UsageError;

namespace {

constexpr const char* kProgram = "train_translate";

// --resume continues the run exactly as config.json describes it; only these may be given with it.
bool allowed_with_resume(const std::string& flag) {
  return flag == "--out" || flag == "--resume" || flag == "--threads";
}

Config resumed_config(const CLI::App& app, const Config& given) {
  const auto run = run_directory(given.out);
  run.check_resumable();
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); })) {
    for (const CLI::Option* option : group->get_options()) {
      if (option->count() > 0 && !allowed_with_resume(option->get_name())) {
        throw UsageError(fmt::format("--resume continues the run as saved in {}: {} cannot be given with it",
                                     run.config().string(), option->get_name()));
      }
    }
  }
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 0 && !option->get_name().empty() && option->get_name() != "--help" &&
        !allowed_with_resume(option->get_name())) {
      throw UsageError(fmt::format("--resume continues the run as saved in {}: {} cannot be given with it",
                                   run.config().string(), option->get_name()));
    }
  }
  Config c = read_config(run);
  c.out = given.out;
  if (app.get_option_no_throw("--threads") && app.get_option_no_throw("--threads")->count() > 0) {
    c.threads = given.threads;
  }
  c.resume = true;
  return c;
}

int train_command(const CLI::App& app, Config c, std::ostream& out, std::ostream& err, bool interactive,
                  const examples::Parallel& parallel) {
  if (c.resume && c.overwrite) throw UsageError("--resume and --overwrite exclude each other");
  if (c.resume) c = resumed_config(app, c);
  tr::install_interrupt_handler();
  TrainResult result;
  try {
    // Ranks other than 0 train silently; their errors still reach stderr through exit_code_of.
    std::ostream silent(nullptr);
    const bool rank0 = parallel.writes_files();
    result = train(c, rank0 ? out : silent, rank0 ? err : silent, interactive && rank0, {}, parallel);
  } catch (...) {
    tr::remove_interrupt_handler();
    throw;
  }
  tr::remove_interrupt_handler();
  // Once config.json exists the run has a report, even an interrupted one.
  if (parallel.writes_files() && fs::exists(run_directory(c.out).config())) {
    out << fmt::format("report: {}\n", write_report(c.out).string()) << std::flush;
  }
  return result.interrupted ? tr::kInterruptedExitCode : 0;
}

// --beam of evaluate and translate: bounded like training's (a beam of 2^32 was a bad_alloc).
void check_beam(std::size_t beam) {
  if (beam == 0) throw UsageError("--beam 0 must be positive");
  if (beam > std::size_t(examples::limits::kBeam)) {
    throw UsageError(fmt::format("--beam {} is above the limit of {}", beam, examples::limits::kBeam));
  }
}

int evaluate_command(const std::string& run_dir, std::size_t beam, const std::string& split,
                     const std::string& precision, std::ostream& out, std::ostream& err) {
  if (split != "valid" && split != "test") {
    throw UsageError(fmt::format("--split must be valid or test, got '{}'", tapegrad::clip_for_message(split)));
  }
  check_beam(beam);
  if (const auto problem = examples::subcommand_precision_problem(precision)) throw UsageError(*problem);
  run_directory(run_dir).check_has({tr::RunDirectory::kConfig, tr::RunDirectory::kModel}, "--out");
  LoadedRun run = load_run(run_dir);
  const tapegrad::autocast scope(examples::subcommand_uses_bfloat16(precision, run.config.precision, err));
  tapegrad::set_num_threads(run.config.threads);
  const Config& c = run.config;
  const auto data = tapegrad::datasets::make_numbers_dataset(0, c.valid_size, c.test_size, c.seed);
  const Direction dir = parse_direction(c.direction);
  const Score s = exact_match(*run.model, split == "test" ? data.test : data.valid, dir, beam);
  out << fmt::format("{} {} exact match ({}): {:.2f}% ({}/{}) at step {}\n", direction_name(dir), split,
                     beam == 1 ? std::string("greedy") : fmt::format("beam {}", beam), s.percent(), s.correct, s.total,
                     run.step);
  for (const auto& m : s.mistakes) out << "  mistake: " << m << "\n";
  return 0;
}

int translate_command(const std::string& run_dir, std::size_t beam, const std::string& attention,
                      const std::string& precision, std::vector<std::string> texts, std::istream& in, std::ostream& out,
                      std::ostream& err) {
  check_beam(beam);
  if (const auto problem = examples::subcommand_precision_problem(precision)) throw UsageError(*problem);
  run_directory(run_dir).check_has({tr::RunDirectory::kConfig, tr::RunDirectory::kModel}, "--out");
  LoadedRun run = load_run(run_dir);
  const tapegrad::autocast scope(examples::subcommand_uses_bfloat16(precision, run.config.precision, err));
  const Direction dir = parse_direction(run.config.direction);
  if (texts.empty()) {
    for (std::string line; std::getline(in, line);)
      if (line.find_first_not_of(" \t\r") != std::string::npos) texts.push_back(line);
  }
  if (texts.empty()) throw UsageError("nothing to translate (give text as arguments or on stdin)");
  std::vector<Ids> sources;
  for (const auto& t : texts) {
    Ids ids = encode_source(t, dir);
    if (ids.size() > run.config.model_options().max_len) {
      throw UsageError(fmt::format("'{}' is {} tokens, longer than the model's {}", tapegrad::clip_for_message(t),
                                   ids.size(), run.config.model_options().max_len));
    }
    sources.push_back(std::move(ids));
  }
  const auto outputs = translate_all(*run.model, sources, beam);
  for (const auto& o : outputs) out << decode_target(o, dir) << "\n";
  if (!attention.empty()) write_attention(*run.model, sources.front(), outputs.front(), dir, attention);
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const examples::Parallel& parallel) {
  Config c;
  CLI::App app{"Trains a Transformer to translate numbers between English words and digits.", kProgram};
  app.add_option("--direction", c.direction, "words2digits|digits2words")->capture_default_str();
  auto* data = app.add_option_group("Data");
  data->add_option("--valid-size", c.valid_size, "validation numbers")->capture_default_str();
  data->add_option("--test-size", c.test_size, "test numbers")->capture_default_str();
  data->add_option("--seed", c.seed, "seeds the sets, the initialization, the shuffle and dropout")
      ->capture_default_str();
  auto* model = app.add_option_group("Model");
  model->add_option("--d-model", c.d_model, "embedding width")->capture_default_str();
  model->add_option("--nhead", c.nhead, "attention heads")->capture_default_str();
  model->add_option("--num-encoder-layers", c.num_encoder_layers, "encoder layers")->capture_default_str();
  model->add_option("--num-decoder-layers", c.num_decoder_layers, "decoder layers")->capture_default_str();
  model->add_option("--dim-feedforward", c.dim_feedforward, "feed-forward width")->capture_default_str();
  model->add_option("--dropout", c.dropout, "dropout probability")->capture_default_str();
  model->add_option("--activation", c.activation, "relu|gelu")->capture_default_str();
  model->add_flag("--norm-first,!--post-norm", c.norm_first, "pre-LN instead of the paper's post-LN");
  model->add_flag("--tie-output,!--no-tie-output", c.tie_output, "output projection shares the target embedding")
      ->capture_default_str();
  auto* opt = app.add_option_group("Optimization");
  opt->add_option("--batch-size", c.batch_size, "sentences per step")->capture_default_str();
  opt->add_option("--steps", c.steps, "training steps")->capture_default_str();
  opt->add_option("--time-limit", c.time_limit, "stop training after this many seconds (0 = none)")
      ->capture_default_str();
  opt->add_option("--warmup", c.warmup, "Noam warmup steps")->capture_default_str();
  opt->add_option("--lr-factor", c.lr_factor,
                  "Noam factor: lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)")
      ->capture_default_str();
  opt->add_option("--beta2", c.beta2, "Adam beta2")->capture_default_str();
  opt->add_option("--eps", c.eps, "Adam epsilon")->capture_default_str();
  opt->add_option("--label-smoothing", c.label_smoothing, "label smoothing")->capture_default_str();
  opt->add_option("--clip-norm", c.clip_norm, "gradient norm clipping (0 = off)")->capture_default_str();
  auto* run = app.add_option_group("Run");
  run->add_option("--threads", c.threads, "BLAS threads")->capture_default_str();
  run->add_option("--precision", c.precision, examples::kPrecisionHelp)->capture_default_str();
  run->add_option("--log-every", c.log_every, "steps between metrics.jsonl lines and plain progress lines")
      ->capture_default_str();
  run->add_option("--eval-every", c.eval_every, "steps between validations (the best model is kept)")
      ->capture_default_str();
  run->add_option("--beam", c.beam, "also evaluate the test set with this beam size")->capture_default_str();
  run->add_option("--out", c.out, "run folder (config.json, metrics.jsonl, checkpoint, model, report.html)")
      ->capture_default_str();
  run->add_flag("--resume", c.resume, "continue the run in --out from its last checkpoint, as its config.json says");
  run->add_flag("--detect-anomaly", c.detect_anomaly,
                "check every op's output and gradients for NaN/inf and stop naming the op (slower)");
  run->add_flag("--overwrite", c.overwrite,
                "start a new run in --out even if it holds one (whose files are then removed); without it a "
                "folder with a checkpoint or a model is refused");

  std::string run_dir = "runs/translate", split = "test", attention, precision;  // precision: empty, the run's
  std::size_t beam = 1;
  std::vector<std::string> texts;
  auto* evaluate = app.add_subcommand("evaluate", "exact match of a trained run on its test or validation set");
  evaluate->add_option("--out", run_dir, "run folder")->capture_default_str();
  evaluate->add_option("--beam", beam, "beam size (1 = greedy)")->capture_default_str();
  evaluate->add_option("--split", split, "valid|test")->capture_default_str();
  evaluate->add_option("--precision", precision, examples::kSubcommandPrecisionHelp);
  auto* translate = app.add_subcommand("translate", "translate text given as arguments, else each line of stdin");
  translate->add_option("--out", run_dir, "run folder")->capture_default_str();
  translate->add_option("--beam", beam, "beam size (1 = greedy)")->capture_default_str();
  translate->add_option("--attention", attention, "write the first input's cross-attention to this SVG file");
  translate->add_option("--precision", precision, examples::kSubcommandPrecisionHelp);
  translate->add_option("text", texts, "texts to translate");
  auto* report = app.add_subcommand("report", "an HTML page of a run's curves and exact match (RUN/report.html)");
  report->add_option("--out", run_dir, "run folder")->capture_default_str();
  app.require_subcommand(0, 1);

  if (const auto code = examples::parse_command_line(app, argc, argv, out, err, kProgram)) return *code;
  return tr::exit_code_of(kProgram, err, [&] {
    for (const CLI::App* command : {evaluate, translate, report}) {
      if (command->parsed() && parallel.size > 1) {
        throw UsageError(fmt::format("{} runs in one process: start it without mpirun", command->get_name()));
      }
    }
    if (evaluate->parsed()) return evaluate_command(run_dir, beam, split, precision, out, err);
    if (translate->parsed()) return translate_command(run_dir, beam, attention, precision, texts, in, out, err);
    if (report->parsed()) {
      run_directory(run_dir).check_has({tr::RunDirectory::kConfig}, "--out");
      out << fmt::format("report: {}\n", write_report(run_dir).string());
      return 0;
    }
    return train_command(app, c, out, err, interactive, parallel);
  });
}

}  // namespace translate
