#!/usr/bin/env bash
# SIGKILL at random moments: runs a tiny real train_imdb training on the fixture and kills it with
# SIGKILL at a random moment, at least 30 times (bounded: 300 s in all), each time continuing with
# --resume once a checkpoint exists (--overwrite when a kill came between the first model and checkpoint).
# After every kill, what the run folder holds must load:
#  - the model, through `train_imdb evaluate` (config.json, vocab.txt and model.safetensors);
#  - the metrics: every line of metrics.jsonl is a JSON object;
#  - the checkpoint: a --resume loads it (it says "resuming ... at step"; it is killed right there, which
#    is also where it rewrites metrics.jsonl), and no run ever exits by itself with an error;
#  - at most one temporary file of a killed save per file is left (config.json, metrics.jsonl, the
#    checkpoint, the model, ...): the next save to that path removes it.
# Usage: kill_loop.sh TRAIN_IMDB FIXTURE_DIR [KILLS]
set -uo pipefail
program=$1 fixture=$2 wanted=${3:-30}
work=$(mktemp -d "${TMPDIR:-/tmp}/tapegrad-kill-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL after $kills kills: $*" >&2; exit 1; }
run=$work/run
args=(--data "$fixture" --no-download --d-model 8 --heads 2 --layers 1 --ff 16 --vocab-size 50 --ngram-buckets 64 --wide-buckets 97 --max-len 32
  --epochs 100000 --batch-size 2 --valid-fraction 0.34 --warmup 1 --lr 0.02 --log-every 1 --threads 1 --out "$run")
RANDOM=${KILL_LOOP_SEED:-20261123}
kills=0 start=$SECONDS
while ((kills < wanted)); do
  ((SECONDS - start < 300)) || fail "only $kills kills in 300 s"
  resume=()
  if [ -f "$run/last.ckpt.safetensors" ]; then
    resume=(--resume)
  elif [ -f "$run/model.safetensors" ]; then
    # Killed between the first epoch's model and checkpoint (the model is saved first, so that a
    # checkpoint never names a best model not on disk): nothing to resume, and the program refuses to
    # start over that model unless told to.
    resume=(--overwrite)
  fi
  "$program" "${args[@]}" "${resume[@]}" > "$work/out" 2> "$work/err" &
  pid=$!
  # A random moment in the first 2 s: start-up, the first epochs, a save, a resume.
  sleep "$(printf '%d.%03d' $((RANDOM % 2)) $((RANDOM % 1000)))"
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  status=$?
  if ((status == 137)); then
    kills=$((kills + 1))
  else
    fail "the run ended by itself with status $status: $(tail -c 2000 "$work/err")"
  fi
  if [ -f "$run/metrics.jsonl" ]; then
    # Each line one JSON object: jq parses them all, awk checks they are one per line.
    jq -e -s 'all(.[]; type == "object")' "$run/metrics.jsonl" > /dev/null 2>&1 &&
      awk '!/^\{.*\}$/ { exit 1 }' "$run/metrics.jsonl" || fail "metrics.jsonl does not load"
  fi
  if [ -f "$run/model.safetensors" ]; then
    "$program" evaluate --run "$run" --data "$fixture" --no-download --split test --threads 1 > "$work/eval.out" \
      2> "$work/eval.err" || fail "the model does not load: $(tail -c 2000 "$work/eval.err")"
  fi
  if [ -f "$run/last.ckpt.safetensors" ]; then
    rm -f "$work/check.err"  # else the last check's "resuming" line could be read before this one starts
    "$program" "${args[@]}" --resume > "$work/check.out" 2> "$work/check.err" &
    check=$!
    until grep -qs '^resuming ' "$work/check.err" || ! kill -0 "$check" 2> /dev/null; do sleep 0.01; done
    kill -KILL "$check" 2> /dev/null
    wait "$check" 2> /dev/null
    grep -qs '^resuming ' "$work/check.err" || fail "the checkpoint does not load: $(tail -c 2000 "$work/check.err")"
  fi
  for file in "$run"/*; do
    [[ $file == *.tmp.* ]] && continue
    leftovers=$(find "$run" -name "$(basename "$file").tmp.*" 2> /dev/null | wc -l)
    ((leftovers <= 1)) || fail "$leftovers temporary files of $(basename "$file") left: $(ls "$run")"
  done
done
echo "$kills kills in $((SECONDS - start)) s; the checkpoint, the model and the metrics loaded after each"
