#!/usr/bin/env python3
"""A lexicon-and-rules sentiment score in the manner of SO-CAL and VADER, alone and added to a
train_imdb run's logit, on the contrast pairs and the validation reviews (docs/experiments/imdb.md, "Rules instead of
learned composition"). The lexicon: each word's naive-Bayes log-count ratio (smoothing 10) over the
run's training reviews, counted outside negation scopes. Needs build/split_dump (build_split_dump.sh).

Usage: scripts/analysis/rules_score.py RUN [TRAIN_IMDB]
"""
import collections
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository

NEGATORS = set("not no never nothing none nobody nowhere neither nor cannot without hardly".split())
ENDS = set(". , ; : ! ? ( ) but".split())
BUT = {"but", "yet", "however", "although", "though"}
OPENERS = {"far from", "rather than", "instead of", "anything but"}


def tokens(text):  # close to datasets/text/tokenizer.hpp for ASCII text
    return re.findall(r"[a-z0-9']+|[^\sa-z0-9']", text.lower().replace("<br />", " "))


def is_negator(w):
    return w in NEGATORS or w.endswith("n't")


def lexicon(train):
    counts = [collections.Counter(), collections.Counter()]
    for label, text in train:
        seen, scope = set(), False
        for w in tokens(text):
            if is_negator(w):
                scope = True
                continue
            if w in ENDS:
                scope = False
            seen.add(("NOT_" + w) if scope else w)
        counts[label].update(seen)
    vocab = set(counts[0]) | set(counts[1])
    total = [sum(c[w] + 10.0 for w in vocab) for c in counts]
    return {w: math.log((counts[1][w] + 10.0) / total[1]) - math.log((counts[0][w] + 10.0) / total[0]) for w in vocab}


def score(ratio, text, margin=0.5):
    words, s, scope, parts, i = tokens(text), 0.0, False, [], 0
    while i < len(words):
        w = words[i]
        if " ".join(words[i:i + 2]) in OPENERS:
            scope, i = True, i + 2
            continue
        if is_negator(w):  # a second negator cancels the first
            scope, i = not scope, i + 1
            continue
        if w in ENDS:
            scope = False
        if w in BUT:
            parts.append(s)
            s = 0.0
        r = ratio.get(w, 0.0)
        if abs(r) >= margin:
            s += -max(-3, min(3, r)) if scope else max(-3, min(3, r))
        i += 1
    return sum(parts) * 0.5 + s * 1.5 if parts else s  # the clause after the last "but" weighs more


def main():
    run = sys.argv[1]
    binary = sys.argv[2] if len(sys.argv) > 2 else str(ROOT / "build/examples/train_imdb")
    split = {}
    for part in ["train", "valid"]:
        out = subprocess.run([str(ROOT / "build/split_dump"), run, part], capture_output=True, text=True, check=True).stdout
        split[part] = [(int(l.split("\t", 1)[0]), l.split("\t", 1)[1]) for l in out.split("\n") if l]
    ratio = lexicon(split["train"])
    print("word polarities:", {w: round(ratio.get(w, 0.0), 2) for w in "good great like hate disappoint praise bad".split()})

    def logits(texts):
        out = subprocess.run([binary, "predict", "--run", run], input="\n".join(texts) + "\n",
                             capture_output=True, text=True, check=True).stdout
        return [math.log(p / (1 - p)) for p in (min(max(float(x), 1e-7), 1 - 1e-7) for x in out.split())]

    valid_logit = logits([t for _, t in split["valid"]])
    valid_score = [score(ratio, t) for _, t in split["valid"]]
    pairs = {}
    for name in ["contrast_pairs_dev", "contrast_pairs"]:
        rows = [l.rstrip("\n").split("\t") for l in open(ROOT / f"examples/imdb/{name}.tsv")][1:]
        pairs[name] = (rows, logits([r[2] for r in rows]), [score(ratio, r[2]) for r in rows])

    def both_right(name, weight, alone=False):
        rows, model, rules = pairs[name]
        z = {(r[0], r[1]): (0 if alone else m) + weight * s for r, m, s in zip(rows, model, rules)}
        return sum(1 for i in {r[0] for r in rows} if z[(i, "1")] > 0 and z[(i, "0")] < 0)

    def valid_accuracy(weight, alone=False):
        right = sum(((0 if alone else m) + weight * s > 0) == (y == 1)
                    for m, s, (y, _) in zip(valid_logit, valid_score, split["valid"]))
        return 100.0 * right / len(split["valid"])

    print(f"rules alone: validation {valid_accuracy(1, True):.2f}%, development pairs "
          f"{both_right('contrast_pairs_dev', 1, True)} of 50, test pairs {both_right('contrast_pairs', 1, True)} of 60")
    for weight in [0.0, 0.1, 0.2, 0.4, 0.8]:
        print(f"model + {weight} x rules: validation {valid_accuracy(weight):.2f}%, development pairs "
              f"{both_right('contrast_pairs_dev', weight)}, test pairs {both_right('contrast_pairs', weight)}")


if __name__ == "__main__":
    main()
