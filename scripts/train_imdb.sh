#!/usr/bin/env bash
# Installs missing packages, builds tapegrad into build/ and trains the IMDb sentiment classifier
# with the default settings. Extra arguments go to train_imdb (see `build/examples/train_imdb --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# clang by default: GCC 12 miscompiles constant vectors with AVX-512 (CMakeLists.txt turns AVX-512 off
# for it), and train_imdb's epoch takes 2:03 built so against 1:05 with clang and AVX-512. CXX=g++
# works too; an existing build/ keeps the compiler it was configured with.
export CXX="${CXX:-clang++}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target train_imdb
exec build/examples/train_imdb --out runs/imdb "$@"
