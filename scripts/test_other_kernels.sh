#!/usr/bin/env bash
# CI stage after scripts/test.sh: the tests hold on other CPUs' kernels too. Every float product runs on
# oneDNN or OpenBLAS with kernels picked for this CPU; another CPU (or instruction set, or library)
# gives other last bits, which a training run amplifies, so a test that pins a value of a chaotic run
# (a step number, a sign, an accuracy) passes here and fails there. This stage reruns the tests of
# build/ that run the programs, which train (CTest label "programs", tests/CMakeLists.txt:
# tapegrad_app_tests, the *_cli_* command lines, the tutorials, train_imdb's mpirun, anomaly, SIGKILL
# and browser runs), on kernels other than this machine's best:
#   1. oneDNN one instruction-set level below the best this CPU has (ONEDNN_MAX_CPU_ISA=AVX2 on an
#      AVX-512 CPU, SSE41 on an AVX2 one), with float products forced onto oneDNN
#      (TAPEGRAD_FLOAT_GEMM=onednn: below AVX-512 tapegrad would otherwise pick OpenBLAS);
#   2. float products on OpenBLAS's SSE3 kernels (TAPEGRAD_FLOAT_GEMM=openblas
#      OPENBLAS_CORETYPE=Prescott), which every x86-64 CPU runs;
# then builds build-openblas/ with -DTAPEGRAD_ONEDNN=OFF (the library, tapegrad_tests and the MPI
# checks; no examples) and runs all its tests, package_install included (the installed package found
# by CMake and by pkg-config without oneDNN). Each pass first prints the machine line
# (tapegrad::machine_line()) naming its kernels.
# Time, measured on this 2-core machine with ccache off (CCACHE_DISABLE=1) after test.sh, other builds
# beside it for the first minutes: 7 min 46 s (the two passes 67 s and 50 s, the cold build of
# build-openblas/ about 5 min 15 s, its tests 35 s; 10 min 6 s user + 1 min 2 s sys CPU). Nothing
# is left out of the selection: its slowest tests, train_imdb_sigkill_loop (about 48 s) and the two
# browser pages, overlap the others under ctest -j2. With ccache warm (a fresh clone after test.sh): 138 s,
# 96 + 96 + 510 tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so that build-openblas/ below reuses the objects of
# build/ that its options do not change.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CXX="${CXX:-clang++}"
start=$SECONDS
jobs=$(nproc)

# The best instruction set of this CPU as oneDNN names them, and the level below it.
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
  below=AVX2
elif has avx2; then
  below=SSE41
else
  below=SSE41 # an older CPU: oneDNN's lowest level, which may be its best too
fi

# ctest_in DIR NAME [VAR=VALUE...] -- [CTEST OPTION...]: the machine line of that environment, then ctest
# in DIR with it. The whole output goes to DIR/Testing/NAME.log; printed are the summary, and on a
# failure every line but the passed tests'.
failed=0
ctest_in() {
  local dir=$1 log=$1/Testing/$2.log environment=()
  shift 2
  while [[ $1 != -- ]]; do
    environment+=("$1")
    shift
  done
  shift
  mkdir -p "$dir/Testing"
  env "${environment[@]}" "$dir/tests/tapegrad_machine"
  if (cd "$dir" && env "${environment[@]}" ctest "$@" --no-tests=error --output-on-failure -j"$jobs") >"$log" 2>&1; then
    grep -E 'tests passed|Total Test time' "$log" || true
  else
    grep -vE '^ +Start +[0-9]+: |Passed +[0-9.]+ sec' "$log" || true
    failed=1
  fi
}

echo "== test_other_kernels: build/, ctest -L programs, on oneDNN one level below this CPU's best"
ctest_in build onednn_$below ONEDNN_MAX_CPU_ISA=$below TAPEGRAD_FLOAT_GEMM=onednn -- -L programs
echo "== test_other_kernels: build/, ctest -L programs, on OpenBLAS's SSE3 kernels"
ctest_in build openblas_prescott TAPEGRAD_FLOAT_GEMM=openblas OPENBLAS_CORETYPE=Prescott -- -L programs

echo "== test_other_kernels: build-openblas/ (-DTAPEGRAD_ONEDNN=OFF -DTAPEGRAD_BUILD_EXAMPLES=OFF), every test"
cmake -S . -B build-openblas -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_ONEDNN=OFF -DTAPEGRAD_BUILD_EXAMPLES=OFF >/dev/null
if ! cmake --build build-openblas -j"$jobs" >build-openblas/build.log 2>&1; then
  tail -n 50 build-openblas/build.log
  exit 1
fi
ctest_in build-openblas all --
echo "== test_other_kernels: $((SECONDS - start)) s"
if ((failed)); then
  echo "test_other_kernels: tests failed (above)" >&2
  exit 1
fi
