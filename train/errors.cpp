#include "tapegrad/train/errors.hpp"

#include <fmt/format.h>

#include <vector>

#include "tapegrad/autograd/messages.hpp"

namespace tapegrad::train {

std::string error_message(std::string_view program, std::string_view message) {
  std::vector<std::string_view> lines;
  for (std::size_t begin = 0;;) {
    const std::size_t end = message.find('\n', begin);
    lines.push_back(message.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos || end + 1 == message.size()) break;
    begin = end + 1;
  }
  std::string out = fmt::format("{}: ", program);
  for (std::size_t i = 0; i < lines.size() && i < kErrorLines; ++i) {
    out += clip_for_message(lines[i], kErrorLineBytes) + '\n';
  }
  if (lines.size() > kErrorLines) out += fmt::format("... ({} more lines)\n", lines.size() - kErrorLines);
  return out;
}

int exit_code_of(std::string_view program, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    err << error_message(program, e.what()) << std::flush;
    return kUsageExitCode;
  } catch (const std::exception& e) {
    err << error_message(program, e.what()) << std::flush;
    return kFailureExitCode;
  }
}

}  // namespace tapegrad::train
