#include "tapegrad/datasets/tokenizers/read_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace tapegrad::datasets::tokenizers {

std::string read_whole_file(const std::filesystem::path& path, std::string_view who) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(fmt::format("{}: cannot read {}: it is a folder", who, path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read {}: {}", who, path.string(), std::strerror(errno)));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(fmt::format("{}: cannot read {}: a read failed", who, path.string()));
  return text;
}

}  // namespace tapegrad::datasets::tokenizers
