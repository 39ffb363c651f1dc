#include "examples/common/precision.hpp"

#include <fmt/format.h>

#include "examples/common/settings.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/machine.hpp"
#include "tapegrad/autograd/messages.hpp"

namespace examples {

namespace {

const char* const kSlow =
    "notice: bf16 has no native kernels here (no AVX512-BF16 or AMX in use, see the machine line): it runs the float "
    "kernels on bfloat16-rounded operands, at fp32's speed or slower";

}  // namespace

std::optional<std::string> precision_problem(const std::string& requested, const std::string& resolved,
                                             const char* resolved_key) {
  if (auto problem = choice_problem("--precision", requested, {"fp32", "bf16", "auto"})) return problem;
  if (resolved.empty()) return std::nullopt;
  if (resolved != "fp32" && resolved != "bf16") {
    return fmt::format("\"{}\" {} is not one of fp32|bf16", resolved_key, tapegrad::clip_for_message(resolved));
  }
  if (requested != "auto" && resolved != requested) {
    return fmt::format("\"{}\" {} contradicts --precision {}", resolved_key, resolved, requested);
  }
  return std::nullopt;
}

std::string resolve_precision(const std::string& requested) {
  if (requested == "auto") return tapegrad::has_native_bfloat16() ? "bf16" : "fp32";
  return requested;
}

std::vector<std::string> precision_messages(const std::string& requested, const std::string& resolved, bool resumed) {
  std::string why;
  if (requested != "auto") {
    why = "--precision " + requested;
  } else if (!resumed) {
    why = tapegrad::has_native_bfloat16() ? "--precision auto: this machine multiplies bfloat16 natively"
                                          : "--precision auto: this machine has no native bfloat16 products";
  } else {
    why = "--precision auto chose it when the run started; --resume keeps it";
    const std::string here = resolve_precision("auto");
    if (here != resolved) why += fmt::format(", though auto would choose {} on this machine", here);
  }
  std::vector<std::string> lines = {
      fmt::format("precision: {} ({}){}", resolved, why,
                  resolved == "bf16"
                      ? ": matrix products in bfloat16 accumulated in float; weights, optimizer, norms and losses in "
                        "float"
                      : "")};
  if (resolved == "bf16" && !tapegrad::has_native_bfloat16()) {
    lines.push_back(resumed ? fmt::format("{}; the run keeps the precision it started in (a new run with --precision "
                                          "auto would train in fp32 here)",
                                          kSlow)
                            : fmt::format("{}; --precision fp32 or auto trains faster here", kSlow));
  }
  return lines;
}

std::string start_precision(const std::string& requested, const std::string& recorded, bool resumed,
                            tapegrad::train::Progress& progress) {
  const std::string resolved = resumed && !recorded.empty() ? recorded : resolve_precision(requested);
  progress.message(tapegrad::machine_line());
  for (const auto& line : precision_messages(requested, resolved, resumed)) progress.message(line);
  return resolved;
}

std::optional<std::string> bfloat16_notice(const std::string& resolved) {
  if (resolved != "bf16" || tapegrad::has_native_bfloat16()) return std::nullopt;
  return fmt::format("{}; --precision fp32 or auto is faster here", kSlow);
}

std::optional<std::string> subcommand_precision_problem(const std::string& given) {
  return given.empty() ? std::nullopt : precision_problem(given);
}

bool subcommand_uses_bfloat16(const std::string& given, const std::string& run_requested, std::ostream& err) {
  const std::string resolved = resolve_precision(given.empty() ? run_requested : given);
  if (const auto notice = bfloat16_notice(resolved)) err << *notice << "\n" << std::flush;
  return resolved == "bf16";
}

}  // namespace examples
