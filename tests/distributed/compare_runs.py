#!/usr/bin/env python3
"""Two run folders of one program trained the same model: one by a single process, one by several ranks
under mpirun (or resumed on another number of them). Compared step by step, their metrics.jsonl lines
must name the same steps with the same learning rate and losses (training and validation) within a
relative `tolerance`, and every tensor of their model.safetensors must agree within `tolerance`
(float32 sums taken in another order differ in the last bits).

  compare_runs.py RUN_A RUN_B [TOLERANCE] [--skip-key-bias D_MODEL]   (default tolerance 1e-6)

--skip-key-bias leaves out the key part (elements D_MODEL .. 2 D_MODEL) of every self_attn.in_proj_bias:
softmax ignores a constant added to every key, so that part's gradient is zero but for rounding, which
Adam's normalization scales up to steps of lr, so two runs agree on it only by chance.
"""
import argparse
import json
import struct
import sys


def tensors(path, key_bias_dim=0):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", (path, name, entry["dtype"])
        a, b = entry["data_offsets"]
        values = struct.unpack("<%df" % ((b - a) // 4), data[a:b])
        if key_bias_dim and name.endswith("self_attn.in_proj_bias"):
            values = values[:key_bias_dim] + values[2 * key_bias_dim:]
        out[name] = values
    return out


def metrics(run):
    with open(run + "/metrics.jsonl") as f:
        return [json.loads(line) for line in f]


parser = argparse.ArgumentParser(description="compare two run folders step by step")
parser.add_argument("run_a")
parser.add_argument("run_b")
parser.add_argument("tolerance", nargs="?", type=float, default=1e-6)
parser.add_argument("--skip-key-bias", type=int, default=0, metavar="D_MODEL")
args = parser.parse_args()
a, b, tolerance = args.run_a, args.run_b, args.tolerance
problems = []

lines_a, lines_b = metrics(a), metrics(b)
if len(lines_a) != len(lines_b):
    problems.append(f"metrics.jsonl has {len(lines_a)} lines in {a}, {len(lines_b)} in {b}")
worst_loss = 0.0
for i, (x, y) in enumerate(zip(lines_a, lines_b), 1):
    if x.get("step") != y.get("step") or x.get("split") != y.get("split"):
        problems.append(f"line {i}: step {x.get('step')} against {y.get('step')}")
        continue
    for key in ("loss", "valid_loss", "lr"):
        if key in x or key in y:
            u, v = x.get(key), y.get(key)
            if u is None or v is None:
                problems.append(f"line {i} (step {x.get('step')}): {key} only in one run")
                continue
            difference = abs(u - v) / max(1.0, abs(u))
            worst_loss = max(worst_loss, difference)
            if difference > tolerance:
                problems.append(f"line {i} (step {x.get('step')}): {key} {u} against {v}")

model_a = tensors(a + "/model.safetensors", args.skip_key_bias)
model_b = tensors(b + "/model.safetensors", args.skip_key_bias)
if model_a.keys() != model_b.keys():
    problems.append(f"the models hold different tensors: {sorted(model_a)} against {sorted(model_b)}")
worst, worst_name = 0.0, ""
for name in model_a.keys() & model_b.keys():
    for u, v in zip(model_a[name], model_b[name]):
        if abs(u - v) > worst:
            worst, worst_name = abs(u - v), name
print(f"{len(lines_a)} metrics lines, largest relative loss difference {worst_loss:.3g}; "
      f"{len(model_a)} tensors, largest difference {worst:.3g} ({worst_name})")
if worst > tolerance:
    problems.append(f"{worst_name} differs by {worst:.3g} > {tolerance:g}")
for p in problems:
    print("compare_runs:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
