#include "examples/common/command_line.hpp"

#include <fmt/format.h>

#include "tapegrad/train/errors.hpp"

namespace examples {

namespace {

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
    err << fmt::format("{}: {} (see {} --help)\n", program, e.what(), program);
    return tapegrad::train::kUsageExitCode;
  }
  return std::nullopt;
}

}  // namespace examples
