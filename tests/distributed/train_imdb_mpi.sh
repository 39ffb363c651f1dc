#!/usr/bin/env bash
# train_imdb under mpirun: 2 ranks (and 3, more than the batch's rows) with the global batch split between
# them train, step by step, the same model as one process with the whole batch (dropout off; word dropout
# and crops are drawn for the global batch), rank 0 alone writes the run's files, and the log says how the work is split.
#   train_imdb_mpi.sh MPIRUN TRAIN_IMDB DATA
set -euo pipefail
source "$(dirname "$0")/common.sh"
mpirun=$1
program=$2
data=$3

# SGD, not Adam: the key part of in_proj_bias has a gradient that is zero but for rounding (softmax
# ignores a constant added to every key), and Adam scales that noise up to a step of lr. fp32: the
# comparison is at float's rounding (1e-6), which bf16's products need not keep between two layouts.
flags=(--data "$data" --no-download --d-model 8 --heads 2 --layers 2 --ff 16 --vocab-size 50 --ngram-buckets 64 --wide-buckets 97 --max-len 32
  --log-every 1 --epochs 3 --batch-size 2 --valid-fraction 0.34 --warmup 1 --optimizer sgd --momentum 0.9 --lr 0.1
  --pooling max --threads 1 --dropout 0 --attn-dropout 0 --word-dropout 0.1 --precision fp32)
"$program" "${flags[@]}" --out "$work/one" > "$work/one.out" 2> "$work/one.err"
"$mpirun" -np 2 --oversubscribe "$program" "${flags[@]}" --out "$work/two" > "$work/two.out" 2> "$work/two.err" ||
  fail "2 ranks: $(cat "$work/two.err")"
grep -q "data-parallel: 2 ranks x 1 thread(s); global batch 2 = 1 per rank" "$work/two.err" ||
  fail "no data-parallel line in the log: $(cat "$work/two.err")"
# One summary (rank 0's), and the same metrics lines as the single process.
test "$(grep -c '^test accuracy' "$work/two.out")" -eq "$(grep -c '^test accuracy' "$work/one.out")" ||
  fail "summaries differ: $(cat "$work/one.out" "$work/two.out")"

# Ranks started with different settings (--seed): the job ends at start, naming the rank that differs.
expect_seed_mismatch_named "$mpirun" "$program" "$work/three" "${flags[@]}"

# Step by step: the same metrics lines with the same losses, and the models, within 1e-6 (float sums in
# another order).
python3 "$(dirname "$0")/compare_runs.py" "$work/one" "$work/two"

# 3 ranks on a batch of 2: one rank holds no row of a step, and the step is still the one process's.
"$mpirun" -np 3 --oversubscribe "$program" "${flags[@]}" --out "$work/three-ranks" > /dev/null 2> "$work/three.err" ||
  fail "3 ranks: $(cat "$work/three.err")"
grep -q "data-parallel: 3 ranks x 1 thread(s); global batch 2 = 0 or 1 per rank" "$work/three.err"
python3 "$(dirname "$0")/compare_runs.py" "$work/one" "$work/three-ranks"
