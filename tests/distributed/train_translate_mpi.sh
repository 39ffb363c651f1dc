#!/usr/bin/env bash
# train_translate under mpirun: 2 ranks (and 3) with the global batch split between them train, step by step,
# the model of one process with the whole batch (dropout off); rank 0 alone writes the run's files and
# the log says how the work is split; ranks started with other settings are stopped at start, naming
# the rank; and a run interrupted on 2 ranks resumes on 1 and on 4 to the model of the uninterrupted run.
#   train_translate_mpi.sh MPIRUN TRAIN_TRANSLATE
set -euo pipefail
source "$(dirname "$0")/common.sh"
mpirun=$1
program=$2
here=$(cd "$(dirname "$0")" && pwd)

# Adam with eps 1e-3 rather than the recipe's 1e-9: the key part of each in_proj_bias has a gradient that
# is zero but for rounding (softmax ignores a constant added to every key), and with a tiny eps Adam
# scales that noise up to a step of the learning rate, so those biases would differ by 0.1 between the
# two layouts (harmlessly: they cannot change any output). The validation set is large enough that a
# validation takes a moment, which leaves time to interrupt the run below between two of them. fp32: the
# comparison is at float's rounding (1e-6); in bf16 a rank's gradients, scaled by its share of the batch,
# round to bfloat16 otherwise than the whole batch's.
flags=(--d-model 16 --nhead 2 --num-encoder-layers 1 --num-decoder-layers 1 --dim-feedforward 32 --batch-size 8
  --steps 12 --warmup 2 --eval-every 4 --log-every 1 --valid-size 1000 --test-size 20 --dropout 0 --threads 1
  --eps 1e-3 --lr-factor 0.5 --precision fp32)
"$program" "${flags[@]}" --out "$work/one" > "$work/one.out" 2> "$work/one.err" || fail "one process: $(cat "$work/one.err")"
"$mpirun" -np 2 --oversubscribe "$program" "${flags[@]}" --out "$work/two" > "$work/two.out" 2> "$work/two.err" ||
  fail "2 ranks: $(cat "$work/two.err")"
grep -q "data-parallel: 2 ranks x 1 thread(s); global batch 8 = 4 per rank" "$work/two.err" ||
  fail "no data-parallel line in the log: $(cat "$work/two.err")"
# One summary (rank 0's), as many as the single process prints.
test "$(grep -c '^test exact match' "$work/two.out")" -eq 1 || fail "not one summary: $(cat "$work/two.out")"
python3 "$here/compare_runs.py" "$work/one" "$work/two" || fail "2 ranks do not train as one process"
# 3 ranks, which do not divide the batch of 8 (3, 3 and 2 rows): each row counts once.
"$mpirun" -np 3 --oversubscribe "$program" "${flags[@]}" --out "$work/three-ranks" > /dev/null 2> "$work/three.err" ||
  fail "3 ranks: $(cat "$work/three.err")"
grep -q "data-parallel: 3 ranks x 1 thread(s); global batch 8 = 2 or 3 per rank" "$work/three.err" ||
  fail "no data-parallel line in the log: $(cat "$work/three.err")"
python3 "$here/compare_runs.py" "$work/one" "$work/three-ranks" || fail "3 ranks do not train as one process"

# Ranks started with different settings (--seed): the job ends at start, naming what and which rank differs.
expect_seed_mismatch_named "$mpirun" "$program" "$work/three" "${flags[@]}"

# SIGINT to both ranks once the first checkpoint (step 4) is on disk: the job stops with it intact, and
# --resume continues it on another number of ranks to the uninterrupted run's model. The cut run shards
# its optimizer state and gradients (ZeRO-2), its checkpoint holds the whole state: resumed on one
# process without ZeRO, and on 4 ranks with ZeRO-1.
"$mpirun" -np 2 --oversubscribe "$program" "${flags[@]}" --zero 2 --out "$work/cut" > "$work/cut.out" \
  2> "$work/cut.err" &
job=$!
for _ in $(seq 3000); do
  [ -f "$work/cut/last.ckpt.safetensors" ] && break
  sleep 0.01
done
# The ranks are mpirun's children, read in one go from /proc (procps's pgrep is not among the packages
# installed, and a scan of every process is slow enough to miss the moment).
read -r -a ranks < <(cat /proc/"$job"/task/*/children 2> /dev/null) || true
((${#ranks[@]} == 2)) || fail "expected mpirun's 2 ranks, found ${#ranks[@]}: $(cat "$work/cut.err")"
kill -INT "${ranks[@]}" 2> /dev/null || true
status=0
wait "$job" || status=$?
((status != 0)) || fail "the run ended before it was interrupted (a slow machine?): $(cat "$work/cut.err")"
grep -q "interrupted: stopped after step" "$work/cut.err" || fail "no interruption in the log: $(cat "$work/cut.err")"
cp -r "$work/cut" "$work/cut4"
"$program" --out "$work/cut" --resume > "$work/resume1.out" 2> "$work/resume1.err" ||
  fail "--resume on 1 process: $(cat "$work/resume1.err")"
grep -q "resuming .* at step" "$work/resume1.err" || fail "did not resume: $(cat "$work/resume1.err")"
python3 "$here/compare_runs.py" "$work/one" "$work/cut" || fail "2 ranks resumed on 1 differ from the uninterrupted run"
"$mpirun" -np 4 --oversubscribe "$program" --out "$work/cut4" --resume --zero 1 > "$work/resume4.out" \
  2> "$work/resume4.err" ||
  fail "--resume on 4 ranks: $(cat "$work/resume4.err")"
grep -q "data-parallel: 4 ranks x 1 thread(s); global batch 8 = 2 per rank" "$work/resume4.err" ||
  fail "no data-parallel line in the log: $(cat "$work/resume4.err")"
python3 "$here/compare_runs.py" "$work/one" "$work/cut4" || fail "2 ranks resumed on 4 differ from the uninterrupted run"
echo "train_translate_mpi: 2 ranks, and a run of 2 ranks with ZeRO-2 resumed on 1 and on 4 with ZeRO-1, train as one process"
