/// @file
/// How a training program ends: exit codes shared by every program (2 for a bad command line or setting,
/// 130 for Ctrl-C, 1 for any other failure), and the error type that selects the first.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tapegrad::train {

/// A bad flag or setting, or one that contradicts the run being resumed: the program prints its
/// message (naming the flag and the value) on one line and exits with kUsageExitCode.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr int kFailureExitCode = 1;        ///< unreadable data or run files, a failed write
inline constexpr int kUsageExitCode = 2;          ///< a bad command line, as for getopt-style tools
inline constexpr int kInterruptedExitCode = 130;  ///< stopped by SIGINT, as shells report it (128 + 2)

/// The longest line and the most lines error_message() keeps of a message.
///@{
inline constexpr std::size_t kErrorLineBytes = 1024;
inline constexpr std::size_t kErrorLines = 50;
///@}

/// "<program>: <message>\n" as a program prints it: each line of message clipped to kErrorLineBytes
/// (autograd/messages.hpp's clip_for_message) and at most kErrorLines lines, so that a message quoting
/// an untrusted input (a 10 MB line of stdin, a path given on the command line) stays short.
std::string error_message(std::string_view program, std::string_view message);

/// Runs body and returns its exit code; a UsageError becomes kUsageExitCode and any other
/// std::exception kFailureExitCode, each after printing error_message(program, what()) on err.
int exit_code_of(std::string_view program, std::ostream& err, const std::function<int()>& body);

}  // namespace tapegrad::train
