/// @file
/// Parsing JSON that a program did not write itself (safetensors headers, config.json, metrics.jsonl,
/// metadata) with its nesting bounded. nlohmann's parser keeps its own stack, but dump() and
/// comparisons of the value it builds recurse: a value nested 100,000 deep overflowed the stack later
/// (an error message quoting it, a metrics line written back by --resume).
#pragma once

#include <cstddef>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

namespace tapegrad::io {

/// The deepest nesting of arrays and objects parse_json accepts by default; the files it reads nest
/// at most 3 or 4 deep.
constexpr int kMaxJsonDepth = 32;

/// Parses text in time linear in its size. Throws std::runtime_error "nests arrays or objects deeper
/// than N levels", "has N entries, more than the limit of M" (members of the outermost object or
/// array, checked before the value is built) or "is not valid JSON: <why>" (a syntax error, a number
/// beyond double's range), never nlohmann's exceptions; the caller prefixes what it read (a file, a
/// header).
nlohmann::json parse_json(std::string_view text, int max_depth = kMaxJsonDepth,
                          std::size_t max_entries = std::numeric_limits<std::size_t>::max());

/// The file at path parsed by parse_json; throws std::runtime_error "<path>: cannot open for reading",
/// "<path>: cannot read" or "<path>: <parse_json's message>".
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace tapegrad::io
