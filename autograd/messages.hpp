/// @file
/// Quoting untrusted text in error messages: a message names the problem, it never echoes a whole
/// input (a 10 MB line in a file would otherwise become 10 MB of stderr).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tapegrad {

/// Bytes of an untrusted string that an error message shows at most.
constexpr std::size_t kMessageClip = 80;

/// `text` itself when it has at most `max` bytes, else its first `max` bytes followed by
/// "... (N bytes)"; control bytes are shown as '?' so a message stays one line.
inline std::string clip_for_message(std::string_view text, std::size_t max = kMessageClip) {
  std::string out(text.substr(0, max));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (text.size() > max) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace tapegrad
