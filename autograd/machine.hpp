/// @file
/// What this machine is, as figures need it said: the CPU, its instruction sets, and the kernel each
/// kind of product runs on. Programs print machine_line() at start; benchmarks print it beside times.
#pragma once

#include <string>
#include <vector>

namespace tapegrad {

/// The CPU as Linux reports it (/proc/cpuinfo).
struct CpuInfo {
  std::string model;             ///< "AMD EPYC", "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
  std::vector<std::string> isa;  ///< the instruction sets that matter for products, e.g. AVX2, AMX-BF16
  int logical_cpus = 0;          ///< what the machine has, not what tapegrad uses
  bool has(const std::string& name) const;
};
/// This machine's CPU, read once on first use.
const CpuInfo& cpu_info();

/// One line naming the CPU, its instruction sets, the kernels of float, bfloat16 and double products,
/// and any warning about them, e.g. "machine: AMD EPYC, 2 CPUs (AVX2 FMA); float products: oneDNN
/// 2.6.3 brg:avx2; bfloat16: none native: ...; double: OpenBLAS 0.3.21 Zen".
std::string machine_line();

namespace detail {
/// "OpenBLAS 0.3.21 Zen" from openblas_get_config() and openblas_get_corename().
std::string openblas_name(const std::string& config, const std::string& core);
/// Empty, or a warning with the remedy when OpenBLAS chose kernels (core) for weaker instruction sets
/// than this CPU has, as 0.3.21 does on CPUs newer than itself ("Prescott" on a Sapphire Rapids).
std::string openblas_core_warning(const std::string& core);
}  // namespace detail

}  // namespace tapegrad
