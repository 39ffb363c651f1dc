#!/usr/bin/env bash
# train_lm under mpirun: 2 ranks (and 3, which do not divide the batch) with the global batch split
# between them train the same model as one process with the whole batch (dropout off), for the causal
# and the masked objective; rank 0 alone writes the run's files, and the log says how the work is split.
#   train_lm_mpi.sh MPIRUN TRAIN_LM DATA
set -euo pipefail
source "$(dirname "$0")/common.sh"
mpirun=$1
program=$2
data=$3

# fp32: the comparison is at float's rounding (1e-6); in bf16 a rank's gradients, scaled by its share of
# the batch, round to bfloat16 otherwise than the whole batch's.
for objective in causal masked; do
  flags=(--data "$data" --no-download --objective "$objective" --vocab-size 60 --context 48 --layers 2 --d-model 16
    --heads 2 --ff 32 --batch-size 4 --steps 6 --eval-every 3 --warmup 1 --lr 0.01 --valid-fraction 0.34 --threads 1
    --dropout 0 --attn-dropout 0 --log-every 1 --precision fp32)
  "$program" "${flags[@]}" --out "$work/one-$objective" > "$work/one.out" 2> "$work/one.err" || {
    cat "$work/one.err"
    exit 1
  }
  "$mpirun" -np 2 --oversubscribe "$program" "${flags[@]}" --out "$work/two-$objective" > "$work/two.out" \
    2> "$work/two.err" || {
    cat "$work/two.err"
    exit 1
  }
  grep -q "data-parallel: 2 ranks x 1 thread(s); global batch 4 = 2 per rank" "$work/two.err" || {
    echo "no data-parallel line in the log:"
    cat "$work/two.err"
    exit 1
  }
  # One summary (rank 0's), and as many metrics lines as the single process.
  test "$(grep -c '^final validation' "$work/two.out")" -eq 1 || {
    echo "not one summary:"
    cat "$work/two.out"
    exit 1
  }
  test "$(wc -l < "$work/two-$objective/metrics.jsonl")" -eq "$(wc -l < "$work/one-$objective/metrics.jsonl")"

  # Step by step: the same metrics lines with the same losses, and the models, within 1e-6 (float sums
  # in another order), but for the key part of in_proj_bias (see compare_runs.py).
  python3 "$(dirname "$0")/compare_runs.py" "$work/one-$objective" "$work/two-$objective" --skip-key-bias 16
done

# A run whose --overwrite was killed before its first checkpoint (its files in previous-run/): rank 0
# puts them back before any rank reads the folder, so --resume on 2 ranks finds the finished run.
cp -r "$work/two-causal" "$work/killed"
mkdir "$work/killed/previous-run"
find "$work/killed" -maxdepth 1 -type f -exec mv {} "$work/killed/previous-run/" \;
"$mpirun" -np 2 --oversubscribe "$program" --resume --out "$work/killed" > "$work/five.out" 2> "$work/five.err" || {
  cat "$work/five.err"
  exit 1
}
grep -q "put back the previous run's" "$work/five.err"
cmp "$work/two-causal/model.safetensors" "$work/killed/model.safetensors"

# ZeRO: stages 1 and 2 on 2 ranks train the one-process model too, and config.json records the stage.
flags=(--data "$data" --no-download --vocab-size 60 --context 48 --layers 2 --d-model 16 --heads 2 --ff 32
  --batch-size 6 --steps 4 --eval-every 2 --warmup 1 --lr 0.01 --valid-fraction 0.34 --threads 1 --dropout 0
  --attn-dropout 0 --log-every 1 --precision fp32)
"$program" "${flags[@]}" --out "$work/one-zero" > /dev/null 2> "$work/one.err" || {
  cat "$work/one.err"
  exit 1
}
for stage in 1 2; do
  "$mpirun" -np 2 --oversubscribe "$program" "${flags[@]}" --zero "$stage" --out "$work/zero$stage" \
    > /dev/null 2> "$work/zero.err" || {
    cat "$work/zero.err"
    exit 1
  }
  grep -q "\"zero\": $stage" "$work/zero$stage/config.json"
  python3 "$(dirname "$0")/compare_runs.py" "$work/one-zero" "$work/zero$stage" --skip-key-bias 16
done
# 3 ranks, plain and at stage 2: the 4 training reviews of a step (fewer than --batch-size) are cut 2, 1
# and 1, each counted once, and the step is still the one process's.
for stage in 0 2; do
  "$mpirun" -np 3 --oversubscribe "$program" "${flags[@]}" --zero "$stage" --out "$work/three$stage" \
    > /dev/null 2> "$work/zero.err" || {
    cat "$work/zero.err"
    exit 1
  }
  grep -q "data-parallel: 3 ranks x 1 thread(s); global batch 6 = 2 per rank" "$work/zero.err"
  python3 "$(dirname "$0")/compare_runs.py" "$work/one-zero" "$work/three$stage" --skip-key-bias 16
done

# Ranks started with different settings (--seed): the job ends at start, naming the rank that differs.
flags=(--data "$data" --no-download --vocab-size 60 --context 48 --layers 1 --d-model 16 --heads 2 --ff 32
  --batch-size 2 --steps 2 --warmup 1 --valid-fraction 0.34 --threads 1)
expect_seed_mismatch_named "$mpirun" "$program" "$work/three" "${flags[@]}"
# The subcommands run in one process.
if "$mpirun" -np 2 --oversubscribe "$program" evaluate --run "$work/one-causal" > /dev/null 2> "$work/four.err"; then
  echo "evaluate ran under mpirun -np 2"
  exit 1
fi
grep -q "evaluate runs in one process: start it without mpirun" "$work/four.err"
