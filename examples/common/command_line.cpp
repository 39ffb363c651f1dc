#include "examples/common/command_line.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/train/errors.hpp"

namespace examples {

namespace {

// The checks of parse_command_line's numeric values; an accepted integer is rewritten in plain decimal.
std::string check_integer(std::string& value, bool is_unsigned) {
  const std::string shown = tapegrad::clip_for_message(value);
  const char* begin = value.data() + (value.size() > 1 && value[0] == '+' ? 1 : 0);
  const char* end = value.data() + value.size();
  if (is_unsigned && begin != end && *begin == '-') return shown + " must not be negative";
  std::int64_t v = 0;
  std::uint64_t u = 0;
  const auto [stop, error] = is_unsigned ? std::from_chars(begin, end, u) : std::from_chars(begin, end, v);
  if (error == std::errc::result_out_of_range) {
    return fmt::format("{} is outside the range of a 64-bit {}integer", shown, is_unsigned ? "unsigned " : "");
  }
  if (error != std::errc() || stop != end) return shown + " is not a decimal integer";
  value = is_unsigned ? std::to_string(u) : std::to_string(v);
  return {};
}

std::string check_float(const std::string& value) {
  errno = 0;
  char* stop = nullptr;
  const double v = std::strtod(value.c_str(), &stop);
  if (value.empty() || stop != value.c_str() + value.size()) {
    return tapegrad::clip_for_message(value) + " is not a number";
  }
  if (errno == ERANGE && std::isinf(v)) return tapegrad::clip_for_message(value) + " is outside the range of a double";
  return {};
}

// Adds the checks to every INT, UINT and FLOAT option of app, its option groups and subcommands.
void check_numbers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name().substr(0, option->get_type_name().find(':'));
    if (type == "INT" || type == "UINT") {
      const bool is_unsigned = type == "UINT";
      option->check(CLI::Validator([is_unsigned](std::string& v) { return check_integer(v, is_unsigned); }, ""));
    } else if (type == "FLOAT") {
      option->check(CLI::Validator([](std::string& v) { return check_float(v); }, ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_numbers(*sub);
}

// The help of the subcommand the user asked it of, else the program's.
std::string help_of(const CLI::App& app, CLI::AppFormatMode mode) {
  for (const CLI::App* sub : app.get_subcommands()) {
    if (sub->parsed() && !sub->get_name().empty()) return sub->help("", mode);
  }
  return app.help("", mode);
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                                      std::ostream& err, std::string_view program) {
  check_numbers(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << help_of(app, CLI::AppFormatMode::Normal);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << help_of(app, CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help given to a subcommand
      out << help_of(app, CLI::AppFormatMode::Normal);
      return 0;
    }
    // CLI11's own messages (an unknown flag, a value that is not a number) as one line too.
    err << tapegrad::train::error_message(program, fmt::format("{} (see {} --help)", e.what(), program));
    return tapegrad::train::kUsageExitCode;
  }
  return std::nullopt;
}

}  // namespace examples
