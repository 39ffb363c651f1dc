#include "examples/translate/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/common/command_line.hpp"
#include "examples/common/commands.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"
#include "examples/translate/batches.hpp"
#include "examples/translate/config.hpp"
#include "examples/translate/report.hpp"
#include "examples/translate/training.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/train/errors.hpp"

namespace translate {

namespace fs = std::filesystem;
namespace tr = tapegrad::train;
using tr::UsageError;

namespace {

// --resume continues the run as its config.json describes it; of the flags that shape it, those given
// must agree with it (train() checks), and --threads and --out may change.
Config resumed_config(const CLI::App& app, const Config& given) {
  const auto run = run_directory(given.out);
  run.check_resumable();
  return examples::with_saved_settings(flags(), app, given, read_config(run));
}

int train_command(const CLI::App& app, Config c, std::ostream& out, std::ostream& err, bool interactive,
                  const examples::Parallel& parallel) {
  if (c.resume && c.overwrite) throw UsageError("--resume and --overwrite exclude each other");
  examples::settle_run_folder(run_directory(c.out), parallel, err);
  if (c.resume) c = resumed_config(app, c);
  return examples::run_training(
      parallel, out, err, interactive,
      [&](std::ostream& o, std::ostream& e, bool bar) { return train(c, o, e, bar, {}, parallel).interrupted; },
      run_directory(c.out), [&] { return write_report(c.out); });
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
    if (const auto problem = untranslatable(t, dir)) {
      throw UsageError(fmt::format("cannot translate '{}': {}", tapegrad::clip_for_message(t), *problem));
    }
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

// The subcommands' arguments; run_dir, beam and precision (empty: the run's) are shared by them.
struct SubcommandArgs {
  std::string run_dir = "runs/translate", split = "test", attention, precision;
  std::size_t beam = 1;
  std::vector<std::string> texts;
};

struct Subcommands {
  CLI::App* evaluate;
  CLI::App* translate;
  CLI::App* report;
};

Subcommands add_subcommands(CLI::App& app, SubcommandArgs& a) {
  auto* evaluate = app.add_subcommand("evaluate", "exact match of a trained run on its test or validation set");
  evaluate->add_option("--out", a.run_dir, "run folder")->capture_default_str();
  evaluate->add_option("--beam", a.beam, "beam size (1 = greedy)")->capture_default_str();
  evaluate->add_option("--split", a.split, "valid|test")->capture_default_str();
  evaluate->add_option("--precision", a.precision, examples::kSubcommandPrecisionHelp);
  auto* translate = app.add_subcommand("translate", "translate text given as arguments, else each line of stdin");
  translate->add_option("--out", a.run_dir, "run folder")->capture_default_str();
  translate->add_option("--beam", a.beam, "beam size (1 = greedy)")->capture_default_str();
  translate->add_option("--attention", a.attention, "write the first input's cross-attention to this SVG file");
  translate->add_option("--precision", a.precision, examples::kSubcommandPrecisionHelp);
  translate->add_option("text", a.texts, "texts to translate");
  auto* report = app.add_subcommand("report", "an HTML page of a run's curves and exact match (RUN/report.html)");
  report->add_option("--out", a.run_dir, "run folder")->capture_default_str();
  return {evaluate, translate, report};
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const examples::Parallel& parallel) {
  Config c;
  CLI::App app{"Trains a Transformer to translate numbers between English words and digits.", kProgram};
  flags().add_to(app, c);
  SubcommandArgs a;
  const Subcommands subs = add_subcommands(app, a);
  app.require_subcommand(0, 1);

  if (const auto code = examples::parse_command_line(app, argc, argv, out, err, kProgram)) return *code;
  return tr::exit_code_of(kProgram, err, [&] {
    for (const CLI::App* command : {subs.evaluate, subs.translate, subs.report}) {
      if (command->parsed()) examples::check_subcommand(app, *command, parallel);
    }
    if (subs.evaluate->parsed()) return evaluate_command(a.run_dir, a.beam, a.split, a.precision, out, err);
    if (subs.translate->parsed()) {
      return translate_command(a.run_dir, a.beam, a.attention, a.precision, a.texts, in, out, err);
    }
    if (subs.report->parsed()) {
      return examples::report_command(
          run_directory(a.run_dir), [&] { return write_report(a.run_dir); }, out, err, "--out");
    }
    return train_command(app, c, out, err, interactive, parallel);
  });
}

}  // namespace translate
