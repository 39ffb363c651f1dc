# Shell pieces the programs' MPI tests share (sourced, not run): $work, a temporary folder for the
# test's runs that is removed when the test exits, and the checks below.

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fail MESSAGE...: says what went wrong, under the test's name, and ends the test.
fail() {
  echo "$(basename "$0" .sh): $*" >&2
  exit 1
}

# expect_seed_mismatch_named MPIRUN PROGRAM OUT FLAGS...: one rank started with --seed 7 and one
# without must end the job at start, naming the configuration and rank 1. Exits 1 otherwise.
expect_seed_mismatch_named() {
  local mpirun=$1 program=$2 out=$3
  shift 3
  if "$mpirun" -np 1 --oversubscribe "$program" "$@" --out "$out" : \
    -np 1 --oversubscribe "$program" "$@" --seed 7 --out "$out" > "$out.out" 2> "$out.err"; then
    fail "ranks with different --seed trained"
  fi
  grep -q "configuration" "$out.err" && grep -q "rank 1" "$out.err" ||
    fail "the mismatch is not named: $(cat "$out.err")"
}
