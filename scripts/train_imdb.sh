#!/usr/bin/env bash
# Installs missing packages, builds tapegrad into build/ and trains the IMDb sentiment classifier
# with the default settings. Extra arguments go to train_imdb (see `build/examples/train_imdb --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target train_imdb
exec build/examples/train_imdb --out runs/imdb "$@"
