#!/usr/bin/env bash
# Contrast pairs with both members right when a constant is added to every logit of a run's predict
# output: the development pairs, then the test pairs, for each shift.
# Usage: scripts/analysis/threshold_shift.sh RUN [TRAIN_IMDB]
set -euo pipefail
run=$(realpath "$1")
bin=$(realpath "${2:-$(dirname "$0")/../../build/examples/train_imdb}")
cd "$(dirname "$0")/../.."
for pairs in examples/imdb/contrast_pairs_dev.tsv examples/imdb/contrast_pairs.tsv; do
  echo "$pairs"
  tail -n +2 "$pairs" | cut -f3 | "$bin" predict --run "$run" | paste <(tail -n +2 "$pairs" | cut -f1,2) - |
    awk -F'\t' '{p[$1 "," $2] = log($3 / (1 - $3)); ids[$1] = 1}
      END {for (d = -0.4; d <= 0.81; d += 0.2) {n = 0; for (i in ids) if (p[i ",1"] + d > 0 && p[i ",0"] + d < 0) n++;
           printf "  shift %+.1f: %d\n", d, n}}'
done
