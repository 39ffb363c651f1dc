"""Turns benchmarks/run.sh's JSON lines into the markdown table of docs/performance.md.

    python3 benchmarks/report.py results.jsonl docs/performance.md <section> <command> <load before> <load after> \\
        [machine.json]

The table replaces whatever lies between <!-- BEGIN bench:<section> --> and <!-- END bench:<section> -->
(appended at the end when the markers are missing). FLOP counts are analytic, the same for both sides.
"""
import datetime
import json
import os
import statistics
import subprocess
import sys


def attention_fwd(B, L, E):
    # packed q/k/v projection, Q K^T and P V over all heads (sum over heads of 2 L L D = 2 L L E), out_proj
    return 2 * B * L * E * 3 * E + 2 * (2 * B * L * L * E) + 2 * B * L * E * E


def train_fwd(B, L, E, F, layers):
    return layers * (attention_fwd(B, L, E) + 2 * (2 * B * L * E * F))


SOFTMAX_N = 64 * 4 * 256 * 256
LN_N = 64 * 256 * 64
FF_N = 64 * 256 * 128
# case: (description, FLOPs per call, formula)
CASES = {
    "gemm_2048": ("gemm 2048^3 (the ceiling)", 2 * 2048**3, "2 n^3"),
    "matmul_qkv": ("matmul [16384,64]@[64,192] (qkv projection)", 2 * 16384 * 64 * 192, "2 m n k"),
    "matmul_ff1": ("matmul [16384,64]@[64,128] (linear1)", 2 * 16384 * 64 * 128, "2 m n k"),
    "matmul_ff2": ("matmul [16384,128]@[128,64] (linear2)", 2 * 16384 * 128 * 64, "2 m n k"),
    "matmul_scores": ("batched matmul [256,256,16]@[256,16,256] (Q K^T per head)", 2 * 256 * 256 * 256 * 16,
                      "2 batch m n k"),
    "softmax": ("softmax fwd+bwd [64,4,256,256] dim -1", 8 * SOFTMAX_N, "8 N (fwd 5 N, bwd 3 N)"),
    "log_softmax": ("log_softmax fwd+bwd [64,4,256,256] dim -1", 8 * SOFTMAX_N, "8 N (fwd 5 N, bwd 3 N)"),
    "layer_norm": ("layer_norm fwd+bwd [64,256,64] over 64, affine", 18 * LN_N, "18 N (fwd 8 N, bwd 10 N)"),
    "relu": ("relu fwd+bwd [64,256,128]", 2 * FF_N, "2 N (fwd N, bwd N)"),
    "gelu": ("gelu (erf) fwd+bwd [64,256,128]", 2 * FF_N, "2 N (one per element and pass; erf and exp not counted)"),
    "dropout": ("dropout p 0.1 fwd+bwd [64,256,128]", 2 * FF_N, "2 N (fwd N, bwd N)"),
    "add": ("residual add fwd+bwd [64,256,64] + [64,256,64]", LN_N, "N (the gradient passes through)"),
    "silu": ("silu fwd+bwd [64,256,128]", 2 * FF_N, "2 N (one per element and pass; exp not counted)"),
    "leaky_relu": ("leaky_relu 0.01 fwd+bwd [64,256,128]", 2 * FF_N, "2 N (fwd N, bwd N)"),
    "clamp": ("clamp(-0.5, 0.5) fwd+bwd [64,256,128]", 2 * FF_N, "2 N (fwd N, bwd N)"),
    "minimum": ("minimum fwd+bwd [64,256,128] with a broadcast [128]", 2 * FF_N, "2 N (fwd N, bwd N)"),
    "softplus": ("softplus fwd+bwd [64,256,128]", 2 * FF_N, "2 N (one per element and pass; exp and log not counted)"),
    "elu": ("elu fwd+bwd [64,256,128]", 2 * FF_N, "2 N (one per element and pass; exp not counted)"),
    "cumsum": ("cumsum fwd+bwd [64,256,128] dim 1", 2 * FF_N, "2 N (fwd N, bwd N)"),
    "topk": ("topk k 5 fwd+bwd of [4096,2000] dim -1", 4096 * 2000, "N (one comparison per element)"),
    "kl_div": ("kl_div batchmean fwd+bwd [4096,2000]", 5 * 4096 * 2000, "5 N (fwd 3 N, bwd 2 N; log not counted)"),
    "pad": ("pad (0, 0, 0, 16) fwd+bwd [64,256,64] -> [64,272,64]", 64 * 272 * 64 + LN_N,
            "N_out + N (elements written, fwd and bwd)"),
    "normalize": ("normalize p 2 dim -1 fwd+bwd [64,256,64]", 8 * LN_N, "8 N (fwd 3 N, bwd 5 N)"),
    "logsumexp": ("logsumexp fwd+bwd [64,4,256,256] dim -1", 6 * SOFTMAX_N, "6 N (fwd 3 N, bwd 3 N)"),
    "gather": ("gather fwd+bwd of [4096,1] targets out of [4096,2000] dim 1", 4096 * 2000, "m V (the gradient's zeros)"),
    "index_select": ("index_select fwd+bwd of 16384 rows out of [20000,64]", 2 * 16384 * 64 + 20000 * 64,
                     "2 n E + V E"),
    "scale_add_pe": ("x * 8 + pe[1,256,64] fwd+bwd, x [64,256,64]", 3 * LN_N, "3 N (fwd 2 N, bwd N)"),
    "linear_relu": ("relu(linear) fwd+bwd [16384,64] -> 128 (tapegrad: fused linear_activation)",
                    6 * 16384 * 64 * 128, "3 x 2 m n k (one product forward, two backward)"),
    "add_layer_norm": ("layer_norm(x + r) fwd+bwd [64,256,64] over 64, affine (tapegrad: fused add_layer_norm)",
                       19 * LN_N, "19 N (layer_norm's 18 N, the add's N)"),
    "rms_norm": ("rms_norm fwd+bwd [64,256,64] over 64, affine (torch: the composite formula)", 13 * LN_N,
                 "13 N (fwd 4 N, bwd 9 N)"),
    "rotary": ("rotary embedding fwd+bwd [64,4,256,16] (torch: x cos + rotate_half(x) sin)", 6 * LN_N,
               "6 N (fwd 3 N, bwd 3 N)"),
    "attention": ("MultiheadAttention self-attn fwd+bwd [64,256,64], 4 heads, key padding mask, dropout 0.1",
                  3 * attention_fwd(64, 256, 64), "3 x (6 B L E^2 + 4 B L^2 E + 2 B L E^2)"),
    "embedding_adamw": ("embedding [64,256] in [20000,64] fwd+bwd + AdamW step", 13 * 20000 * 64 + 64 * 256 * 64,
                        "13 V E + B L E"),
    "train_default": ("training step, default (B 64, L 256, d 64, 4 heads, ff 128, 1 layer)",
                      3 * train_fwd(64, 256, 64, 128, 1), "3 x layers x (attention + 4 B L E F)"),
    "train_large": ("training step, large (B 32, L 512, d 256, 4 heads, ff 1024, 4 layers)",
                    3 * train_fwd(32, 512, 256, 1024, 4), "3 x layers x (attention + 4 B L E F)"),
    "eval_default": ("evaluation (no grad), default model", train_fwd(64, 256, 64, 128, 1),
                     "layers x (attention + 4 B L E F)"),
    "train_default_1k": ("training step, default model at L 1024 (B 16: the same tokens per step)",
                         3 * train_fwd(16, 1024, 64, 128, 1), "3 x layers x (attention + 4 B L E F)"),
    "train_default_4k": ("training step, default model at L 4096 (B 4: the same tokens per step)",
                         3 * train_fwd(4, 4096, 64, 128, 1), "3 x layers x (attention + 4 B L E F)"),
}


def machine():
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    info = {}
    for line in lscpu.splitlines():
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    return (f"{info.get('Model name', '?')}, {info.get('CPU(s)', '?')} CPU(s) "
            f"({info.get('Core(s) per socket', '?')} core(s) per socket, {info.get('Thread(s) per core', '?')} "
            f"thread(s) per core), {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB RAM")


def fmt_ms(t):
    return f"{t:.1f}" if t >= 10 else f"{t:.2f}"


def main():
    results_path, doc_path, section, command, load_before, load_after = sys.argv[1:7]
    machine_line = json.load(open(sys.argv[7]))["machine"] if len(sys.argv) > 7 else None
    rows = {}
    for line in open(results_path):
        r = json.loads(line)
        rows[(r["case"], r["threads"], r["side"], r.get("precision", "fp32"))] = r
    order = [c for c in CASES if any(k[0] == c for k in rows)]
    threads = sorted({k[1] for k in rows}, reverse=True)
    out = [f"<!-- BEGIN bench:{section} -->",
           f"Command: `{command}`  ",
           f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
           f"Machine: {machine()}  "]
    if machine_line:
        out += [f"Kernels (`bench_tapegrad --machine`): {'; '.join(machine_line.splitlines())}  "]
    out += [f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after}  ",
            "Times in ms: median [min - max] over the repetitions after two warmup calls (one when a call takes over a second); ratio = tapegrad median / "
            "torch median (< 1: tapegrad faster). bf16 rows: tapegrad under tapegrad::autocast, torch under "
            "torch.autocast(\"cpu\", dtype=torch.bfloat16); gemm_2048 in bf16 multiplies bfloat16 operands. "
            "GFLOP/s from the analytic FLOP count below and the median, with its share of this run's two ceilings "
            "(the faster side's gemm 2048^3 in fp32, then in bf16, at that thread count). "
            "Peak RSS: the process's ru_maxrss (each case runs in its own process), in MiB; the number in "
            "parentheses is the growth over the RSS before the case started (torch's import alone is ~230 MiB). "
            "CPU per call: user + system ms of the whole process per timed repetition (system time is mostly "
            "page faults). The machine may be shared: compare the two sides within one run (they run "
            "interleaved, case by case), not absolute numbers across runs.",
            ""]
    for t in threads:
        ceilings = {}
        for precision in ("fp32", "bf16"):
            for side in ("tapegrad", "torch"):
                g = rows.get(("gemm_2048", t, side, precision))
                if g:
                    gf = CASES["gemm_2048"][1] / statistics.median(g["times_ms"]) / 1e6
                    ceilings[precision] = max(ceilings.get(precision, 0.0), gf)
        # The float kernels forced one by one: the fp32 ceiling is the fastest of them all, and the library's
        # own path is reported as a share of it.
        kernels = {}
        for side in ("kernel:onednn", "kernel:openblas"):
            g = rows.get(("gemm_2048", t, side, "fp32"))
            if g:
                kernels[side.split(":")[1]] = CASES["gemm_2048"][1] / statistics.median(g["times_ms"]) / 1e6
        if kernels:
            ceilings["fp32"] = max([ceilings.get("fp32", 0.0)] + list(kernels.values()))
        named = ", ".join(f"{p} {v:.1f} GFLOP/s" for p, v in ceilings.items())
        out += [f"**{t} thread(s)**" + (f" (gemm 2048^3 ceilings in this run: {named})" if named else ""),
                "",
                "| case | precision | tapegrad ms | torch ms | ratio | tapegrad GFLOP/s (% of fp32 / bf16 ceiling) | "
                "torch GFLOP/s (% of fp32 / bf16 ceiling) | tapegrad CPU per call, user + sys ms | "
                "torch CPU per call, user + sys ms | tapegrad peak RSS | torch peak RSS |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in order:
            for precision in ("fp32", "bf16"):
                a, b = rows.get((c, t, "tapegrad", precision)), rows.get((c, t, "torch", precision))
                if not a or not b:
                    continue
                desc, flops, _ = CASES[c]
                ma, mb = statistics.median(a["times_ms"]), statistics.median(b["times_ms"])

                def cell(r, m):
                    return f"{fmt_ms(m)} [{fmt_ms(min(r['times_ms']))} - {fmt_ms(max(r['times_ms']))}] (n={len(r['times_ms'])})"

                def rss(r):
                    return f"{r['rss_peak_kb'] / 1024:.0f} (+{(r['rss_peak_kb'] - r['rss_base_kb']) / 1024:.0f})"

                def gflops(m):
                    g = flops / m / 1e6
                    shares = " / ".join(f"{100 * g / ceilings[p]:.0f}%" for p in ("fp32", "bf16") if p in ceilings)
                    return f"{g:.1f}" + (f" ({shares})" if shares else "")

                def cpu(r):
                    if "user_ms" not in r:
                        return "-"
                    return f"{fmt_ms(r['user_ms'])} + {fmt_ms(r['sys_ms'])}"

                out.append(f"| {desc} | {precision} | {cell(a, ma)} | {cell(b, mb)} | {ma / mb:.2f} | {gflops(ma)} | "
                           f"{gflops(mb)} | {cpu(a)} | {cpu(b)} | {rss(a)} | {rss(b)} |")
        out.append("")
        own = rows.get(("gemm_2048", t, "tapegrad", "fp32"))
        if kernels and own:
            g_own = CASES["gemm_2048"][1] / statistics.median(own["times_ms"]) / 1e6
            best = max(kernels.values())
            out += [f"fp32 gemm 2048^3 at {t} thread(s), each float kernel forced (TAPEGRAD_FLOAT_GEMM): " +
                    ", ".join(f"{k} {v:.1f} GFLOP/s" for k, v in kernels.items()) +
                    f"; the library's own path {g_own:.1f} GFLOP/s, {100 * g_own / best:.0f}% of the fastest.", ""]
        pairs = []
        for c in order:
            r = {(side, p): rows.get((c, t, side, p)) for side in ("tapegrad", "torch") for p in ("fp32", "bf16")}
            if all(r.values()):
                m = {k: statistics.median(v["times_ms"]) for k, v in r.items()}
                pairs.append(f"| {CASES[c][0]} | {m['tapegrad', 'bf16'] / m['tapegrad', 'fp32']:.2f} | "
                             f"{m['torch', 'bf16'] / m['torch', 'fp32']:.2f} | "
                             f"{m['tapegrad', 'bf16'] / m['torch', 'bf16']:.2f} | "
                             f"{m['tapegrad', 'bf16'] / m['torch', 'fp32']:.2f} |")
        if pairs:
            out += [f"bf16 against fp32 at {t} thread(s) (ratios of medians; < 1: the first is faster):", "",
                    "| case | tapegrad bf16 / tapegrad fp32 | torch autocast / torch fp32 | tapegrad bf16 / torch autocast "
                    "| tapegrad bf16 / torch fp32 |", "|---|---|---|---|---|"] + pairs + [""]
    out += ["FLOP formulas (B batch, L length, E d_model, F feed-forward, V vocabulary, N elements): " +
            "; ".join(f"{c}: {CASES[c][2]}" for c in order) + ".", f"<!-- END bench:{section} -->"]
    block = "\n".join(out)
    text = open(doc_path).read() if os.path.exists(doc_path) else ""
    begin, end = f"<!-- BEGIN bench:{section} -->", f"<!-- END bench:{section} -->"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    open(doc_path, "w").write(text)
    print(block)


if __name__ == "__main__":
    main()
