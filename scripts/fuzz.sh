#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz) for a set time each, on their committed corpus.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   default: 300 s for each of every target
#   scripts/fuzz.sh --seeds                 regenerates the generated seeds of tests/fuzz/corpus/
# Targets: safetensors checkpoint vocab tokenizer imdb_archive imdb_config translate_config lm_config
# tokenizer_json bpe_merges sentencepiece_model.
# Builds build-asan/ (clang, ASan + UBSan, libFuzzer) first; new inputs go to
# build-asan/tests/fuzz/found/<target>/, a crash is written to ./crash-* and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
all=(safetensors checkpoint vocab tokenizer imdb_archive imdb_config translate_config lm_config tokenizer_json bpe_merges
  sentencepiece_model)
CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAPEGRAD_SANITIZE=ON -DTAPEGRAD_FUZZ=ON >/dev/null
if [[ "${1:-}" == "--seeds" ]]; then
  cmake --build build-asan -j"$(nproc)" --target fuzz_checkpoint
  TAPEGRAD_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/checkpoint build-asan/tests/fuzz/fuzz_checkpoint
  exit 0
fi
seconds="${1:-300}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
cmake --build build-asan -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for t in "${targets[@]}"; do
  found="build-asan/tests/fuzz/found/$t"
  mkdir -p "$found"
  echo "fuzz_$t: ${seconds} s"
  build-asan/tests/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "$found" "tests/fuzz/corpus/$t" 2>&1 | grep -E "^(stat::number_of_executed_units|stat::new_units_added|==|SUMMARY|.*ERROR)" || true
  test "${PIPESTATUS[0]}" -eq 0 || { echo "fuzz_$t failed (see crash-* above)"; exit 1; }
done
