#!/usr/bin/env python3
"""A train_imdb run on Gardner et al.'s IMDb contrast sets (github.com/allenai/contrast-sets: reviews
edited minimally so that the label flips). Their originals are aclImdb train/ reviews, so the counts
are given for all pairs and for those whose original is in the run's validation split (never trained
on). Needs build/examples/train_imdb and build/split_dump (build_split_dump.sh).

Usage: scripts/analysis/contrast_sets.py CONTRAST_SETS_CHECKOUT RUN [TRAIN_IMDB]
"""
import csv
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def predict(binary, run, texts):
    out = subprocess.run([binary, "predict", "--run", run], input="\n".join(texts) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def main():
    checkout, run = sys.argv[1], sys.argv[2]
    binary = sys.argv[3] if len(sys.argv) > 3 else str(ROOT / "build/examples/train_imdb")
    key = lambda t: re.sub(r"\W+", "", t)[:120]
    valid = subprocess.run([str(ROOT / "build/split_dump"), run, "valid"], capture_output=True, text=True, check=True).stdout
    valid_keys = {key(line.split("\t", 1)[1]) for line in valid.split("\n") if line}
    for split in ["test", "dev"]:
        rows = {}
        for kind in ["original", "contrast"]:
            with open(f"{checkout}/IMDb/data/{split}_{kind}.tsv", newline="") as f:
                rows[kind] = list(csv.reader(f, delimiter="\t"))[1:]
        texts = {kind: [t.replace("\n", " ") for _, t in rows[kind]] for kind in rows}
        labels = {kind: [lab == "Positive" for lab, _ in rows[kind]] for kind in rows}
        right = {kind: [(p > 0.5) == y for p, y in zip(predict(binary, run, texts[kind]), labels[kind])]
                 for kind in rows}
        fair = [i for i, t in enumerate(texts["original"]) if key(t) in valid_keys]
        for name, ids in [("all", range(len(texts["original"]))), ("original in the validation split", fair)]:
            o = sum(right["original"][i] for i in ids)
            c = sum(right["contrast"][i] for i in ids)
            both = sum(right["original"][i] and right["contrast"][i] for i in ids)
            n = len(ids)
            print(f"{split}, {name}: {n} pairs; originals right {o} ({100 * o / n:.1f}%), "
                  f"edits right {c} ({100 * c / n:.1f}%), both {both}")


if __name__ == "__main__":
    main()
