#include "tapegrad/train/errors.hpp"

#include <fmt/format.h>

namespace tapegrad::train {

int exit_code_of(std::string_view program, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    err << fmt::format("{}: {}\n", program, e.what()) << std::flush;
    return kUsageExitCode;
  } catch (const std::exception& e) {
    err << fmt::format("{}: {}\n", program, e.what()) << std::flush;
    return kFailureExitCode;
  }
}

}  // namespace tapegrad::train
