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
  "$program" "${flags[@]}" --out "$work/one-$objective" > "$work/one.out" 2> "$work/one.err" ||
    fail "one process: $(cat "$work/one.err")"
  "$mpirun" -np 2 --oversubscribe "$program" "${flags[@]}" --out "$work/two-$objective" > "$work/two.out" \
    2> "$work/two.err" || fail "2 ranks: $(cat "$work/two.err")"
  grep -q "data-parallel: 2 ranks x 1 thread(s); global batch 4 = 2 per rank" "$work/two.err" ||
    fail "no data-parallel line in the log: $(cat "$work/two.err")"
  # One summary (rank 0's), and as many metrics lines as the single process.
  test "$(grep -c '^final validation' "$work/two.out")" -eq 1 || fail "not one summary: $(cat "$work/two.out")"
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
"$mpirun" -np 2 --oversubscribe "$program" --resume --out "$work/killed" > "$work/five.out" 2> "$work/five.err" ||
  fail "--resume on 2 ranks: $(cat "$work/five.err")"
grep -q "put back the previous run's" "$work/five.err"
cmp "$work/two-causal/model.safetensors" "$work/killed/model.safetensors"

# ZeRO: stages 1 and 2 on 2 ranks, and 3 ranks plain and at stage 2, train the one-process model too, and
# config.json records the stage. On 3 ranks the 4 training reviews of a step (fewer than --batch-size) are
# cut 2, 1 and 1, each counted once.
flags=(--data "$data" --no-download --vocab-size 60 --context 48 --layers 2 --d-model 16 --heads 2 --ff 32
  --batch-size 6 --steps 4 --eval-every 2 --warmup 1 --lr 0.01 --valid-fraction 0.34 --threads 1 --dropout 0
  --attn-dropout 0 --log-every 1 --precision fp32)
"$program" "${flags[@]}" --out "$work/one-zero" > /dev/null 2> "$work/one.err" ||
  fail "one process: $(cat "$work/one.err")"
for ranks_stage in 2:1 2:2 3:0 3:2; do
  ranks=${ranks_stage%:*} stage=${ranks_stage#*:}
  out="$work/zero-$ranks-$stage"
  "$mpirun" -np "$ranks" --oversubscribe "$program" "${flags[@]}" --zero "$stage" --out "$out" \
    > /dev/null 2> "$work/zero.err" || fail "$ranks ranks at stage $stage: $(cat "$work/zero.err")"
  grep -q "\"zero\": $stage" "$out/config.json" || fail "config.json does not record --zero $stage"
  grep -q "data-parallel: $ranks ranks x 1 thread(s); global batch 6 = $((6 / ranks)) per rank" "$work/zero.err" ||
    fail "no data-parallel line in the log: $(cat "$work/zero.err")"
  python3 "$(dirname "$0")/compare_runs.py" "$work/one-zero" "$out" --skip-key-bias 16
done

# Ranks started with different settings (--seed): the job ends at start, naming the rank that differs.
flags=(--data "$data" --no-download --vocab-size 60 --context 48 --layers 1 --d-model 16 --heads 2 --ff 32
  --batch-size 2 --steps 2 --warmup 1 --valid-fraction 0.34 --threads 1)
expect_seed_mismatch_named "$mpirun" "$program" "$work/three" "${flags[@]}"
# The subcommands run in one process.
if "$mpirun" -np 2 --oversubscribe "$program" evaluate --run "$work/one-causal" > /dev/null 2> "$work/four.err"; then
  fail "evaluate ran under mpirun -np 2"
fi
grep -q "evaluate runs in one process: start it without mpirun" "$work/four.err"
