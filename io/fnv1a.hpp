/// @file
/// Fnv1a: the 64-bit FNV-1a hash that checkpoints and data-parallel consistency checks use to notice
/// a changed byte without comparing whole files or models.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tapegrad::io {

/// Each step h = (h ^ byte) * prime is a bijection of h for a given byte, and a changed byte changes h
/// at its step, so any single changed byte of a fixed-length input changes the hash.
class Fnv1a {
 public:
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ULL;
  }
  void text(const std::string& s) { bytes(s.c_str(), s.size() + 1); }  ///< with its '\0': unambiguous
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  std::uint64_t value() const { return h_; }
  std::string hex() const { return fmt::format("{:016x}", h_); }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace tapegrad::io
