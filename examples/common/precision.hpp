// --precision, which every program takes for training and for its subcommands that run a model: fp32
// (float throughout), bf16 (mixed precision: the forward and backward under tapegrad::autocast, whose
// matrix products take bfloat16 operands and accumulate in float) or auto (bf16 where the CPU
// multiplies bfloat16 natively, else fp32). A run records the value asked for and what it resolved to
// in its config.json, and keeps that resolution on --resume.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tapegrad/train/progress.hpp"

namespace examples {

/// The values --precision takes.
inline const std::vector<std::string> kPrecisionChoices = {"fp32", "bf16", "auto"};

/// The help of the training flag --precision, and of a subcommand's (whose default is the run's).
inline constexpr const char* kPrecisionHelp =
    "fp32|bf16|auto: bf16 trains in mixed precision (bfloat16 matrix products accumulated in float; float weights, "
    "optimizer, norms and losses); auto is bf16 where the CPU multiplies bfloat16 natively, else fp32";
inline constexpr const char* kSubcommandPrecisionHelp =
    "fp32|bf16|auto: bf16 runs the model's matrix products in bfloat16 (default: the run's --precision)";

/// A problem with --precision `requested`, or with `resolved`, what a run's config.json (under
/// `resolved_key`) says it resolved to: "--precision fp16 is not one of fp32|bf16|auto". An empty
/// `resolved` is a run not started yet.
std::optional<std::string> precision_problem(const std::string& requested, const std::string& resolved = {},
                                             const char* resolved_key = "precision-resolved");

/// What --precision `requested` means on this machine: fp32 or bf16; auto is bf16 where
/// tapegrad::has_native_bfloat16(), else fp32.
std::string resolve_precision(const std::string& requested);

/// The lines a training prints about its precision at start: the precision it runs in and why, and,
/// where bf16 has no native kernels here, a notice that it runs at fp32's speed or slower. `resumed`:
/// the run keeps `resolved`, what `requested` resolved to when it started.
std::vector<std::string> precision_messages(const std::string& requested, const std::string& resolved, bool resumed);

/// The precision a training runs in, announced: `recorded` (what a resumed run resolved when it started;
/// empty for a new run, or a run from before --precision) or else --precision `requested` resolved on
/// this machine. Prints the machine line and precision_messages on progress first.
std::string start_precision(const std::string& requested, const std::string& recorded, bool resumed,
                            tapegrad::train::Progress& progress);

/// For a subcommand that runs a model in `resolved`: the notice that bf16 has no native kernels here
/// and runs at fp32's speed or slower, else nothing.
std::optional<std::string> bfloat16_notice(const std::string& resolved);

/// A subcommand's --precision `given` (empty: not given, the run's) checked before the run is read.
std::optional<std::string> subcommand_precision_problem(const std::string& given);

/// Whether a subcommand runs a finished run's model in bf16: --precision `given` (empty: the run's
/// --precision, `run_requested`) resolved on this machine; writes bfloat16_notice to err where it applies.
bool subcommand_uses_bfloat16(const std::string& given, const std::string& run_requested, std::ostream& err);

}  // namespace examples
