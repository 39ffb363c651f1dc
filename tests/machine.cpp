// Prints tapegrad::machine_line(): the CPU and the kernels this process's float, bfloat16 and double
// products run on, as the environment (ONEDNN_MAX_CPU_ISA, TAPEGRAD_FLOAT_GEMM, OPENBLAS_CORETYPE) chose them.
#include "tapegrad/autograd/machine.hpp"

#include <iostream>

int main() {
  std::cout << tapegrad::machine_line() << "\n";
  return 0;
}
