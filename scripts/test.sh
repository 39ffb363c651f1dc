#!/usr/bin/env bash
# Installs missing packages, builds tapegrad into build/ and runs the whole test suite under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so that build folders of the same sources share
# their objects (test_other_kernels.sh's build-openblas/ reuses most of build/'s).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
scripts/install_deps.sh
# clang by default: GCC 12 miscompiles constant vectors with AVX-512 (CMakeLists.txt turns AVX-512 off
# for it), and train_imdb's epoch takes 2:03 built so against 1:05 with clang and AVX-512. CXX=g++
# works too; an existing build/ keeps the compiler it was configured with.
export CXX="${CXX:-clang++}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)"
