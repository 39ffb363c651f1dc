#!/usr/bin/env python3
"""Asks two trained train_translate runs about numbers worded by an independent implementation.

Usage: probe.py PROGRAM W2D_RUN D2W_RUN
The numbers (seeded): 600 uniform in 0..999,999,999, 400 of a random digit count, 500 round ones
(each digit after the first 0 with probability 0.8), plus a few chosen by hand. They may belong to
any split. Prints the mistakes of each direction and a summary line; exits 1 if there is any.
"""
import random
import subprocess
import sys

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def below_hundred(n):
    return ONES[n] if n < 20 else TENS[n // 10] + ("-" + ONES[n % 10] if n % 10 else "")


def group(n):
    hundreds, rest = divmod(n, 100)
    parts = [ONES[hundreds] + " hundred"] if hundreds else []
    if rest:
        parts.append(("and " if hundreds else "") + below_hundred(rest))
    return " ".join(parts)


def words(n):
    """British wording, as datasets/numbers.hpp documents it."""
    if n == 0:
        return "zero"
    millions, rest = divmod(n, 1_000_000)
    thousands, units = divmod(rest, 1000)
    out = []
    if millions:
        out.append(group(millions) + " million")
    if thousands:
        out.append(group(thousands) + " thousand")
    if units:
        out.append(("and " if units < 100 and out else "") + group(units))
    return " ".join(out)


def numbers():
    rng = random.Random(2026)
    chosen = {0, 7, 10, 100, 1000, 12000, 1000000, 1000001, 1000100, 7000000, 100000000, 999999999}
    values = set(chosen)
    while len(values) < 600 + len(chosen):
        values.add(rng.randrange(10**9))
    while len(values) < 1000 + len(chosen):
        values.add(rng.randrange(10 ** rng.randint(1, 9)))
    while len(values) < 1500 + len(chosen):
        digits = [rng.randint(1, 9)] + [0 if rng.random() < 0.8 else rng.randint(1, 9)
                                        for _ in range(rng.randint(1, 9) - 1)]
        values.add(int("".join(map(str, digits))))
    return sorted(values)


def translate(program, run, lines):
    result = subprocess.run([program, "translate", "--out", run], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, check=True)
    return result.stdout.splitlines()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    program, w2d, d2w = sys.argv[1:]
    values = numbers()
    digits = [str(v) for v in values]
    worded = [words(v) for v in values]
    mistakes = 0
    for name, run, sources, targets in (("words2digits", w2d, worded, digits),
                                        ("digits2words", d2w, digits, worded)):
        outputs = translate(program, run, sources)
        wrong = [(s, o, t) for s, o, t in zip(sources, outputs, targets) if o != t]
        for s, o, t in wrong:
            print(f"{name}: {s} -> {o} (expected {t})")
        print(f"{name}: {len(values) - len(wrong)}/{len(values)} exact")
        mistakes += len(wrong)
    sys.exit(1 if mistakes else 0)


if __name__ == "__main__":
    main()
