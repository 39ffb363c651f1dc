#!/usr/bin/env bash
# Builds tapegrad with clang under AddressSanitizer + UndefinedBehaviorSanitizer (with float-cast-overflow)
# and the libFuzzer targets into build-asan/, then runs the whole suite there under CTest: the library
# tests, the three programs' tests and CLI tests, and each fuzz target for TAPEGRAD_FUZZ_SECONDS (default 10)
# on its committed corpus. Run by .ci/run after scripts/test.sh; docs/sanitizers.md says more.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
seconds="${TAPEGRAD_FUZZ_SECONDS:-10}"
CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAPEGRAD_SANITIZE=ON -DTAPEGRAD_FUZZ=ON \
  -DTAPEGRAD_FUZZ_SECONDS="$seconds"
cmake --build build-asan -j"$(nproc)"
cd build-asan
# detect_leaks stays on; a report aborts the test (-fno-sanitize-recover=all).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --output-on-failure -j"$(nproc)"
