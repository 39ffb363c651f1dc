#!/usr/bin/env bash
# Contrast pairs with their negations contracted ("is not" -> "isn't", "cannot" -> "can't"), the
# apostrophe straight (') and typographic (’): both members right, development pairs then test pairs.
# Usage: scripts/analysis/curly_pairs.sh RUN [TRAIN_IMDB]
set -euo pipefail
run=$(realpath "$1")
bin=$(realpath "${2:-$(dirname "$0")/../../build/examples/train_imdb}")
cd "$(dirname "$0")/../.."
for apostrophe in "'" "’"; do
  printf '%s ' "$apostrophe"
  for pairs in examples/imdb/contrast_pairs_dev.tsv examples/imdb/contrast_pairs.tsv; do
    tail -n +2 "$pairs" | cut -f3 |
      sed -E "s/\b(is|was|does|did|could|would|are|were|has|have|should) not\b/\1n${apostrophe}t/g; s/\b(Is|Was|Does|Did) not\b/\1n${apostrophe}t/g; s/\bcannot\b/can${apostrophe}t/g" |
      "$bin" predict --run "$run" | paste <(tail -n +2 "$pairs" | cut -f1,2) - |
      awk -F'\t' '{p[$1 "," $2] = $3; ids[$1] = 1} END {for (i in ids) if (p[i ",1"] > 0.5 && p[i ",0"] < 0.5) n++; printf "%d ", n}'
  done
  echo
done
