#!/usr/bin/env bash
# Builds tapegrad's benchmark and runs it side by side with PyTorch (Debian's python3-torch, on the same
# OpenBLAS), at 2 and 1 threads, each case in its own process; writes the table to docs/performance.md
# (between the BEGIN/END markers of the given section, default "current").
#
#   bash benchmarks/run.sh [section] [case ...]
#
# THREADS="2" bash benchmarks/run.sh ... runs one thread count only (default: "2 1"). The ceilings
# (gemm_2048), the fused layers and the models' cases run in fp32 and in bf16 (tapegrad::autocast against
# torch.autocast("cpu", dtype=torch.bfloat16)), the four runs of a case interleaved; PRECISIONS="fp32"
# leaves bf16 out.
set -euo pipefail
cd "$(dirname "$0")/.."
section=${1:-current}
shift || true
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  cases=(gemm_2048 matmul_qkv matmul_ff1 matmul_ff2 matmul_scores softmax log_softmax layer_norm relu gelu dropout add
         scale_add_pe linear_relu add_layer_norm attention embedding_adamw train_default train_large eval_default train_default_1k train_default_4k)
fi

export CCACHE_BASEDIR=$PWD/..
# A build folder of its own, so that the options below never leak into the test command's build/; clang,
# as scripts/test.sh (GCC 12 must build without AVX-512 on AVX-512 machines, see CMakeLists.txt).
export CXX="${CXX:-clang++}"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_BUILD_EXAMPLES=OFF -DTAPEGRAD_BUILD_TESTS=OFF \
  -DTAPEGRAD_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-bench -j2 --target bench_tapegrad >/dev/null

out=build-bench/benchmarks/results.jsonl
: >"$out"
machine=build-bench/benchmarks/machine.json
build-bench/benchmarks/bench_tapegrad --machine >"$machine"
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["machine"])' "$machine" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $load_before (the two sides run interleaved: compare them within this run)" >&2
for threads in ${THREADS:-2 1}; do
  for c in "${cases[@]}"; do
    # The large model's and the long sequences' steps take seconds: only at 2 threads (where the targets
    # are), to keep the run short.
    case "$c" in train_large | train_default_1k | train_default_4k) if [ "$threads" = 1 ]; then continue; fi ;; esac
    # Both sides get the same thread count for OpenBLAS, OpenMP and torch's intra-op pool.
    export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
    precisions=fp32
    case "$c" in gemm_2048 | linear_relu | attention | train_* | eval_default) precisions=${PRECISIONS:-fp32 bf16} ;; esac
    if [ "$c" = gemm_2048 ]; then
      # The fastest fp32 kernel the machine has, whichever the library's path chose: both float kernels,
      # forced (report.py compares the library's own path with the faster of them).
      for kernel in onednn openblas; do
        TAPEGRAD_FLOAT_GEMM=$kernel build-bench/benchmarks/bench_tapegrad gemm_2048 "$threads" fp32 |
          sed "s/\"side\": \"tapegrad\"/\"side\": \"kernel:$kernel\"/" >>"$out"
      done
    fi
    for precision in $precisions; do
      build-bench/benchmarks/bench_tapegrad "$c" "$threads" "$precision" >>"$out"
      /usr/bin/python3 -W ignore benchmarks/bench_torch.py "$c" "$threads" "$precision" >>"$out"
      echo "done: $c at $threads thread(s) in $precision, load $(cut -d' ' -f1 /proc/loadavg)" >&2
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
prefix=""
if [ -n "${THREADS:-}" ]; then prefix="THREADS=\"$THREADS\" "; fi
python3 benchmarks/report.py "$out" docs/performance.md "$section" "${prefix}bash benchmarks/run.sh $section ${cases[*]}" \
  "$load_before" "$load_after" "$machine"
