#!/usr/bin/env bash
# Builds build/split_dump from split_dump.cpp against the libraries of build/ (make train_imdb first).
set -euo pipefail
cd "$(dirname "$0")/../.."
includes=(-I. $(for d in build/include/*/; do echo "-I$d"; done))
libs=(build/examples/libimdb_app.a build/examples/libimdb_features.a build/examples/libexamples_common.a)
for layer in distributed models datasets train nn optim io autograd; do
  [ -f "build/libtapegrad_$layer.a" ] && libs+=("build/libtapegrad_$layer.a")
done
mpi=()
[ -f build/libtapegrad_distributed.a ] && mpi=($(mpicxx --showme:link 2>/dev/null || true))
"${CXX:-clang++}" -std=c++17 -O1 "${includes[@]}" scripts/analysis/split_dump.cpp "${libs[@]}" \
  -larchive -lcurl -lfmt -lopenblas "${mpi[@]}" -lpthread -o build/split_dump
echo build/split_dump
