"""PyTorch's side of the benchmarks (benchmarks/run.sh): one case per process, one JSON line out.

    /usr/bin/python3 benchmarks/bench_torch.py <case> <threads> [fp32|bf16]

bf16 runs the case under torch.autocast("cpu", dtype=torch.bfloat16) (the models: forward and backward,
the optimizer outside); gemm_2048 in bf16 multiplies bfloat16 tensors.

Shapes, inputs and timing rules mirror benchmarks/bench_tapegrad.cpp.
"""
import json
import math
import resource
import sys
import time

import torch
from torch import nn

DEFAULT = dict(B=64, L=256, d=64, heads=4, ff=128, layers=1)
LARGE = dict(B=32, L=512, d=256, heads=4, ff=1024, layers=4)
# The default model on long sequences, the batch scaled so that tokens per step stay 64 x 256.
LONG = {"train_default_1k": dict(DEFAULT, B=16, L=1024), "train_default_4k": dict(DEFAULT, B=4, L=4096)}


CPU = {"user_ms": 0.0, "sys_ms": 0.0}  # CPU time per timed repetition, set by measure()


def peak_rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def time_ms(f):
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1e3


def measure(f, budget_ms=2500, min_reps=5, max_reps=30):
    first = time_ms(f)
    if first < 1000:
        first = min(first, time_ms(f))
    reps = max(min_reps, min(max_reps, int(budget_ms / max(first, 1e-3))))
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    times = [time_ms(f) for _ in range(reps)]
    u1 = resource.getrusage(resource.RUSAGE_SELF)
    CPU["user_ms"] = (u1.ru_utime - u0.ru_utime) * 1e3 / reps
    CPU["sys_ms"] = (u1.ru_stime - u0.ru_stime) * 1e3 / reps
    return times


def pattern(n, salt):
    """The same LCG as bench_tapegrad.cpp: values in [-1, 1)."""
    mask = (1 << 64) - 1
    s = 0x9E3779B97F4A7C15 ^ salt
    out = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & mask
        out.append((s >> 40) / float(1 << 24) * 2.0 - 1.0)
    return out


def tensor(shape, salt, requires_grad=False):
    # The LCG in Python is slow for millions of values; its first 2^16 values, tiled, stand in.
    n = math.prod(shape)
    base = torch.tensor(pattern(min(n, 1 << 16), salt), dtype=torch.float32)
    t = base.repeat((n + base.numel() - 1) // base.numel())[:n].reshape(shape).clone()
    return t.requires_grad_(requires_grad)


def token_batch(B, L, V):
    ids = torch.zeros(B, L, dtype=torch.long)
    pad = torch.zeros(B, L, dtype=torch.bool)
    for b in range(B):
        length = L // 2 + (37 * b) % (L // 2 + 1)
        for t in range(L):
            if t >= length:
                pad[b, t] = True
            else:
                ids[b, t] = (b * 131 + t * 7919) % (V - 1) + 1
    return ids, pad


class Classifier(nn.Module):
    """tapegrad's nn::TransformerClassifier (sinusoidal positions, post-LN, mean pooling) in torch."""

    def __init__(self, V, d, heads, ff, layers, max_len=512, p=0.1):
        super().__init__()
        self.d = d
        self.embedding = nn.Embedding(V, d, padding_idx=0)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(p)
        layer = nn.TransformerEncoderLayer(d, heads, ff, p, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.classifier = nn.Linear(d, 2)

    def forward(self, ids, pad):
        x = self.embedding(ids) * math.sqrt(self.d) + self.pe[: ids.shape[1]]
        x = self.encoder(self.dropout(x), src_key_padding_mask=pad)
        # torch's eval fast path (nested tensors) returns only up to the longest real sequence.
        x = nn.functional.pad(x, (0, 0, 0, ids.shape[1] - x.shape[1]))
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        return self.classifier((x * keep).sum(1) / keep.sum(1))


def run_case(name, bf16):
    if name == "gemm_2048":
        a, b = tensor((2048, 2048), 1), tensor((2048, 2048), 2)
        if bf16:
            a, b = a.bfloat16(), b.bfloat16()
        return measure(lambda: torch.mm(a, b))
    if name in ("matmul_qkv", "matmul_ff1", "matmul_ff2"):
        k = 128 if name == "matmul_ff2" else 64
        n = {"matmul_qkv": 192, "matmul_ff1": 128, "matmul_ff2": 64}[name]
        a, b = tensor((64 * 256, k), 1), tensor((k, n), 2)
        return measure(lambda: torch.matmul(a, b))
    if name == "matmul_scores":
        a, b = tensor((256, 256, 16), 1), tensor((256, 16, 256), 2)
        return measure(lambda: torch.matmul(a, b))
    if name in ("softmax", "log_softmax"):
        x = tensor((64, 4, 256, 256), 3, True)
        g = tensor((64, 4, 256, 256), 4)
        f = torch.log_softmax if name == "log_softmax" else torch.softmax

        def step():
            f(x, -1).backward(g)
            x.grad = None

        return measure(step)
    if name == "layer_norm":
        x, w, b = tensor((64, 256, 64), 3, True), tensor((64,), 5, True), tensor((64,), 6, True)
        g = tensor((64, 256, 64), 4)

        def step():
            torch.nn.functional.layer_norm(x, (64,), w, b, 1e-5).backward(g)
            x.grad = w.grad = b.grad = None

        return measure(step)
    if name in ("relu", "gelu", "dropout"):
        x, g = tensor((64, 256, 128), 3, True), tensor((64, 256, 128), 4)
        f = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
             "dropout": lambda t: torch.nn.functional.dropout(t, 0.1, True)}[name]

        def step():
            f(x).backward(g)
            x.grad = None

        return measure(step)
    if name in ("silu", "leaky_relu", "clamp", "minimum", "softplus", "elu", "cumsum"):
        x, bound, g = tensor((64, 256, 128), 3, True), tensor((128,), 5, True), tensor((64, 256, 128), 4)
        f = {"silu": torch.nn.functional.silu, "leaky_relu": lambda t: torch.nn.functional.leaky_relu(t, 0.01),
             "clamp": lambda t: torch.clamp(t, -0.5, 0.5), "minimum": lambda t: torch.minimum(t, bound),
             "softplus": torch.nn.functional.softplus, "elu": torch.nn.functional.elu,
             "cumsum": lambda t: torch.cumsum(t, 1)}[name]

        def step():
            f(x).backward(g)
            x.grad = bound.grad = None

        return measure(step)
    if name == "logsumexp":
        x, g = tensor((64, 4, 256, 256), 3, True), tensor((64, 4, 256), 4)

        def step():
            torch.logsumexp(x, -1).backward(g)
            x.grad = None

        return measure(step)
    if name == "gather":
        x, g = tensor((4096, 2000), 3, True), tensor((4096, 1), 4)
        index = torch.tensor([(i * 7919) % 2000 for i in range(4096)], dtype=torch.int64).reshape(4096, 1)

        def step():
            torch.gather(x, 1, index).backward(g)
            x.grad = None

        return measure(step)
    if name == "topk":
        x, g = tensor((4096, 2000), 3, True), tensor((4096, 5), 4)

        def step():
            torch.topk(x, 5).values.backward(g)
            x.grad = None

        return measure(step)
    if name == "kl_div":
        x, t = tensor((4096, 2000), 3, True), (tensor((4096, 2000), 5) + 1.0) * 0.5

        def step():
            torch.nn.functional.kl_div(x, t, reduction="batchmean").backward()
            x.grad = None

        return measure(step)
    if name in ("pad", "normalize"):
        padding = name == "pad"
        x, g = tensor((64, 256, 64), 3, True), tensor((64, 272 if padding else 256, 64), 4)
        f = (lambda t: torch.nn.functional.pad(t, (0, 0, 0, 16))) if padding else \
            (lambda t: torch.nn.functional.normalize(t, 2, -1))

        def step():
            f(x).backward(g)
            x.grad = None

        return measure(step)
    if name == "index_select":
        table, g = tensor((20000, 64), 3, True), tensor((64 * 256, 64), 4)
        ids = torch.tensor([(i * 131) % 19999 + 1 for i in range(64 * 256)], dtype=torch.int64)

        def step():
            torch.index_select(table, 0, ids).backward(g)
            table.grad = None

        return measure(step)
    if name == "add":
        x, r, g = tensor((64, 256, 64), 3, True), tensor((64, 256, 64), 5, True), tensor((64, 256, 64), 4)

        def step():
            (x + r).backward(g)
            x.grad = r.grad = None

        return measure(step)
    if name == "scale_add_pe":
        x, pe, g = tensor((64, 256, 64), 3, True), tensor((1, 256, 64), 5), tensor((64, 256, 64), 4)

        def step():
            (x * 8.0 + pe).backward(g)
            x.grad = None

        return measure(step)
    if name == "linear_relu":
        x, w, b = tensor((64, 256, 64), 3, True), tensor((128, 64), 5, True), tensor((128,), 6, True)
        g = tensor((64, 256, 128), 4)

        def step():
            torch.relu(torch.nn.functional.linear(x, w, b)).backward(g)
            x.grad = w.grad = b.grad = None

        return measure(step)
    if name == "add_layer_norm":
        x, r = tensor((64, 256, 64), 3, True), tensor((64, 256, 64), 7, True)
        w, b, g = tensor((64,), 5, True), tensor((64,), 6, True), tensor((64, 256, 64), 4)

        def step():
            torch.nn.functional.layer_norm(x + r, (64,), w, b, 1e-5).backward(g)
            x.grad = r.grad = w.grad = b.grad = None

        return measure(step)
    # torch 1.13 has no RMSNorm and no rotary embedding: the composite formulas a user writes.
    if name == "rms_norm":
        x, w, g = tensor((64, 256, 64), 3, True), tensor((64,), 5, True), tensor((64, 256, 64), 4)

        def step():
            (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w).backward(g)
            x.grad = w.grad = None

        return measure(step)
    if name == "rotary":
        x, g = tensor((64, 4, 256, 16), 3, True), tensor((64, 4, 256, 16), 4)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16))
        freqs = torch.outer(torch.arange(256, dtype=torch.float64), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().float(), emb.sin().float()

        def step():
            (x * cos + torch.cat((-x[..., 8:], x[..., :8]), dim=-1) * sin).backward(g)
            x.grad = None

        return measure(step)
    if name == "attention":
        torch.manual_seed(0)
        mha = nn.MultiheadAttention(64, 4, dropout=0.1, batch_first=True).train()
        x = tensor((64, 256, 64), 3, True)
        g = tensor((64, 256, 64), 4)
        _, pad = token_batch(64, 256, 20000)

        def step():
            mha(x, x, x, key_padding_mask=pad, need_weights=False)[0].backward(g)
            x.grad = None
            mha.zero_grad(set_to_none=True)

        return measure(step)
    if name == "embedding_adamw":
        torch.manual_seed(0)
        emb = nn.Embedding(20000, 64, padding_idx=0)
        opt = torch.optim.AdamW(emb.parameters())
        ids, _ = token_batch(64, 256, 20000)
        g = tensor((64, 256, 64), 4)

        def step():
            opt.zero_grad(set_to_none=True)
            emb(ids).backward(g)
            opt.step()

        return measure(step)
    if name in ("train_default", "train_large", "eval_default") or name in LONG:
        c = LARGE if name == "train_large" else LONG.get(name, DEFAULT)
        torch.manual_seed(0)
        model = Classifier(20000, c["d"], c["heads"], c["ff"], c["layers"], max_len=max(512, c["L"]))
        ids, pad = token_batch(c["B"], c["L"], 20000)
        target = torch.arange(c["B"]) % 2
        if name == "eval_default":
            model.eval()

            # torch 1.13's fused encoder fast path, taken under no_grad in eval mode, fails under CPU autocast
            # ("expected scalar type BFloat16 but found Float"): in bf16 the forward runs with grad enabled,
            # which keeps it on the layers' ordinary path (it records a graph that is never used).
            def evaluate():
                with torch.set_grad_enabled(bf16), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    model(ids, pad)

            return measure(evaluate)
        model.train()
        opt = torch.optim.AdamW(model.parameters())

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = torch.nn.functional.cross_entropy(model(ids, pad), target)
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()

        large = name == "train_large" or name in LONG
        return measure(step, 6000 if large else 2500, 3 if large else 5)
    raise SystemExit(f"bench_torch.py: unknown case {name!r}")


def main():
    name, threads = sys.argv[1], int(sys.argv[2])
    precision = sys.argv[3] if len(sys.argv) > 3 else "fp32"
    if precision not in ("fp32", "bf16"):
        raise SystemExit(f"bench_torch.py: precision must be fp32 or bf16, got {precision!r}")
    torch.set_num_threads(threads)
    base = peak_rss_kb()
    bf16 = precision == "bf16"
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):  # the other cases run inside it whole
        times = run_case(name, bf16)
    print(json.dumps(dict(side="torch", case=name, threads=threads, precision=precision, times_ms=times,
                          rss_base_kb=base,
                          rss_peak_kb=peak_rss_kb(), **CPU)))


if __name__ == "__main__":
    main()
