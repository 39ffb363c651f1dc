#!/usr/bin/env bash
# The package test (CTest: package_install): installs the current build into a fresh prefix, moves
# the prefix elsewhere (the package must be relocatable), then builds and runs the outside project in
# app/ against it twice: through find_package(tapegrad CONFIG REQUIRED) and through pkg-config.
# Usage: run.sh <tapegrad build dir> <work dir> <aclImdb archive for the program to read>
set -euo pipefail

build=$(cd "$1" && pwd)
work=$2
archive=$3
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)

fail() {
  echo "package test: $*" >&2
  exit 1
}

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)

echo "== cmake --install $build --prefix $work/staged"
cmake --install "$build" --prefix "$work/staged" >"$work/install.log" || { cat "$work/install.log"; fail "install failed"; }
mv "$work/staged" "$work/prefix"
prefix=$work/prefix

# What a user's project relies on is there, as real files that do not point back into this tree.
for f in include/tapegrad/tapegrad.hpp include/tapegrad/autograd/tensor.hpp include/tapegrad/nn/linear.hpp \
  include/tapegrad/datasets/text/tokenizer.hpp; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
config=$(find "$prefix" -name tapegradConfig.cmake)
[ -n "$config" ] || fail "no tapegradConfig.cmake installed"
[ -n "$(find "$prefix" -name tapegradConfigVersion.cmake)" ] || fail "no tapegradConfigVersion.cmake installed"
pc=$(find "$prefix" -name tapegrad.pc)
[ -n "$pc" ] || fail "no tapegrad.pc installed"
for layer in autograd io nn optim train models datasets; do
  [ -n "$(find "$prefix" -name "libtapegrad_$layer.a")" ] || fail "libtapegrad_$layer.a is not installed"
done
links=$(find "$prefix" -type l)
[ -z "$links" ] || fail "symbolic links installed: $links"
if grep -rlF -e "$build" -e "$source_dir" -e "$work/staged" "$prefix" --include='*.cmake' --include='*.pc' --include='*.hpp'; then
  fail "the files above name the build, source or staging folder"
fi

launcher=()
cmake_launcher=()
if command -v ccache >/dev/null; then
  launcher=(ccache)
  cmake_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

echo "== find_package(tapegrad CONFIG REQUIRED) + tapegrad::tapegrad"
cmake -S "$here/app" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" "${cmake_launcher[@]}" \
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON >"$work/configure.log" || { cat "$work/configure.log"; fail "configure failed"; }
found=$(sed -n 's/^tapegrad_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
[[ $found == "$prefix"/* ]] || fail "find_package found tapegrad in '$found', not in $prefix"
cmake --build "$work/cmake-build" || fail "building the CMake project failed"
"$work/cmake-build/app" "$work/run-cmake" "$archive" || fail "the CMake-built program failed"

echo "== g++ main.cpp \$(pkg-config --cflags --libs tapegrad)"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs tapegrad) || fail "pkg-config tapegrad failed"
echo "pkg-config --cflags --libs tapegrad: $flags"
[[ $flags == *"-I$prefix/"* ]] || fail "pkg-config's flags do not point into $prefix"
# shellcheck disable=SC2086  # the flags are a list of words
"${launcher[@]}" g++ "$here/app/main.cpp" $flags -o "$work/app-pkg-config" || fail "building with pkg-config's flags failed"
"$work/app-pkg-config" "$work/run-pkg-config" "$archive" || fail "the pkg-config-built program failed"

echo "package test: both builds ran"
