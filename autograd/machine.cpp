#include "tapegrad/autograd/machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "tapegrad/autograd/blas.hpp"

namespace tapegrad {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

CpuInfo read_cpu_info() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "processor") ++info.logical_cpus;
    if (key == "model name" && info.model.empty()) info.model = value;
    if (key == "flags" && flags.empty()) flags = " " + value + " ";
  }
  if (info.model.empty()) info.model = "unknown CPU";
  // /proc/cpuinfo's flag names, and how figures name them.
  const std::pair<const char*, const char*> known[] = {{"avx2", "AVX2"},
                                                       {"fma", "FMA"},
                                                       {"avx512f", "AVX-512"},
                                                       {"avx512_bf16", "AVX512-BF16"},
                                                       {"amx_bf16", "AMX-BF16"}};
  for (const auto& [flag, name] : known)
    if (flags.find(std::string(" ") + flag + " ") != std::string::npos) info.isa.emplace_back(name);
  return info;
}

// How far up the x86-64 levels an instruction set goes: 1 SSE, 2 AVX, 3 AVX2 + FMA, 4 AVX-512.
int level_of_core(const std::string& core) {
  const std::string c = lower(core);
  for (const char* name : {"skylakex", "cooperlake", "sapphirerapids"})
    if (c == name) return 4;
  for (const char* name : {"haswell", "zen", "excavator"})
    if (c == name) return 3;
  for (const char* name : {"sandybridge", "bulldozer", "piledriver", "steamroller"})
    if (c == name) return 2;
  return 1;
}

int level_of_cpu(const CpuInfo& cpu) {
  if (cpu.has("AVX-512")) return 4;
  if (cpu.has("AVX2") && cpu.has("FMA")) return 3;
  return 1;
}

}  // namespace

bool CpuInfo::has(const std::string& name) const { return std::find(isa.begin(), isa.end(), name) != isa.end(); }

const CpuInfo& cpu_info() {
  static const CpuInfo info = read_cpu_info();
  return info;
}

std::string machine_line() {
  const CpuInfo& cpu = cpu_info();
  std::string isa;
  for (const auto& s : cpu.isa) isa += (isa.empty() ? "" : " ") + s;
  const blas::BackendInfo& b = blas::backend_info();
  std::string line =
      fmt::format("machine: {}, {} CPUs ({}); float products: {}; bfloat16: {}; double: {}", cpu.model,
                  cpu.logical_cpus, isa.empty() ? "no AVX2" : isa, b.float_kernel, b.bfloat16_kernel, b.double_kernel);
  if (!b.warning.empty()) line += "\nwarning: " + b.warning;
  return line;
}

namespace detail {

std::string openblas_name(const std::string& config, const std::string& core) {
  std::istringstream words(config);
  std::string name, version;
  words >> name >> version;  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
  return fmt::format("{} {} {}", name.empty() ? "OpenBLAS" : name, version, core);
}

std::string openblas_core_warning(const std::string& core) {
  const int cpu = level_of_cpu(cpu_info()), chosen = level_of_core(core);
  if (chosen >= cpu) return {};
  const char* remedy = cpu == 4 ? "SkylakeX" : cpu == 3 ? "Haswell" : "SandyBridge";
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return fmt::format(
      "OpenBLAS chose its {} kernels on a CPU with {}{}: the products it runs (double ones, and float ones in a build "
      "without oneDNN) are several times slower than the CPU allows; run with OPENBLAS_CORETYPE={} (torch, which uses "
      "the same OpenBLAS, needs it too)",
      core,
      cpu == 4   ? "AVX-512"
      : cpu == 3 ? "AVX2 and FMA"
                 : "AVX",
      forced ? " (OPENBLAS_CORETYPE asks for them)" : "", remedy);
}

}  // namespace detail

}  // namespace tapegrad
