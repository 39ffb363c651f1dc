#!/usr/bin/env bash
# A real kill -9 in the middle of a save: trains train_lm with a model large enough that each save
# (checkpoint and model, every step) takes a while, kills it the moment a temporary file of
# io::write_file_atomically exists, then resumes the run to its end. The resumed run must say it
# removed the temporary files the kill left, end with exit 0, leave no *.tmp.* file in the folder, and
# its model must load (generate).
# Usage: kill_save.sh TRAIN_LM FIXTURE_DIR
set -uo pipefail
program=$1 fixture=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tapegrad-kill-save-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run=$work/run
args=(--data "$fixture" --no-download --d-model 256 --heads 4 --layers 2 --ff 1024 --vocab-size 50 --batch-size 2
  --valid-fraction 0.34 --warmup 1 --context 32 --steps 12 --eval-every 1 --threads 1 --out "$run")
temporaries() { find "$run" -name '*.tmp.*' 2> /dev/null; }
# After the first checkpoint (so that there is a run to resume), at the first temporary file seen.
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  rm -rf "$run"
  "$program" "${args[@]}" > "$work/out" 2> "$work/err" &
  pid=$!
  until [ -f "$run/last.ckpt.safetensors" ] && [ -n "$(temporaries)" ]; do
    kill -0 "$pid" 2> /dev/null || break
  done
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  [ -n "$(temporaries)" ] && [ -f "$run/last.ckpt.safetensors" ] && break
done
left=$(temporaries)
[ -n "$left" ] || fail "no save was caught after a checkpoint in 10 attempts: $(tail -c 2000 "$work/err")"
echo "killed during a save, leaving: $left"
"$program" "${args[@]}" --resume > "$work/out" 2> "$work/err" || fail "the resumed run failed: $(tail -c 2000 "$work/err")"
for file in $left; do
  grep -qF "removed $file, left by a save that was killed" "$work/err" || fail "not said removed: $file"
done
[ -z "$(temporaries)" ] || fail "temporary files left: $(temporaries)"
grep -q '^final validation' "$work/out" || fail "the resumed run did not finish: $(cat "$work/out")"
"$program" generate --run "$run" --max-new-tokens 5 --threads 1 good > "$work/gen" 2> "$work/gen.err" ||
  fail "the model does not load: $(tail -c 2000 "$work/gen.err")"
echo "the resumed run removed them and finished; its model loads"
