#!/usr/bin/env python3
"""docs/memory.md's memory model: bytes per rank of a GPT-shaped model's training step, and the largest
such model that fits a memory budget per rank with DDP, ZeRO-1 and ZeRO-2 on 1, 8 and 64 machines.

    python3 scripts/memory_model.py [--budget-gib 24] [--context 2048] [--batch 1] [--vocab 50257]

fp32 weights, gradients and AdamW moments (4 + 4 + 8 bytes per parameter), DDP's bucket buffers (one
more copy of the gradients), activation checkpointing per residual block, as docs/memory.md derives them.
Shapes are GPT-2's aspect: layers = d_model / 64, dim_feedforward = 4 d_model, heads of 64.
"""
import argparse

GIB = 1 << 30
BASE = 16 << 20  # the process before the model: libraries, thread pools (bench_tapegrad's rss_base_kb)


def parameters(layers, d, ff, vocab, context):
    """GPT (tied embeddings, learned positions, output bias): docs/memory.md's count."""
    return vocab * d + context * d + layers * (4 * d * d + 2 * d * ff + ff + 9 * d) + 2 * d + vocab


def state_bytes(p, ranks, scheme):
    """Weights, gradients (with DDP's buckets) and AdamW moments per rank."""
    if scheme == "one process":
        return 4 * p + 4 * p + 8 * p
    if scheme == "DDP":
        return 4 * p + 4 * p + 4 * p + 8 * p
    if scheme == "ZeRO-1":  # moments sharded; whole gradients and buckets kept
        return 4 * p + 4 * p + 4 * p + 8 * p / ranks
    if scheme == "ZeRO-2":  # gradients reduce-scattered: a shard of them and of the moments
        return 4 * p + 4 * p / ranks + 8 * p / ranks
    raise ValueError(scheme)


def activation_bytes(layers, d, ff, vocab, tokens, heads, checkpointing):
    """Peak of the activations and their gradients in one step of `tokens` tokens per rank (fp32)."""
    per_token_layer = 8 * d + 2 * ff + heads + 4  # pre-LN GELU layer: docs/memory.md's table, in floats
    logits = 3 * tokens * vocab  # logits, their softmax for the loss's backward, their gradient
    if checkpointing:
        kept = (2 * layers + 1) * tokens * d  # every block's input, the last output
        block = tokens * (2 * ff + 6 * d) + tokens * (2 * ff + 4 * d)  # the feed-forward recomputed + its backward
        return 4 * (kept + max(block, logits))
    working = tokens * (2 * ff + 4 * d)  # the last feed-forward's backward
    return 4 * (layers * tokens * per_token_layer + tokens * d + max(working, logits))


def largest(budget, ranks, scheme, context, batch, vocab, checkpointing):
    best = None
    for d in range(64, 64 * 400, 64):
        layers, ff, heads = d // 64, 4 * d, d // 64
        p = parameters(layers, d, ff, vocab, context)
        total = BASE + state_bytes(p, ranks, scheme) + activation_bytes(
            layers, d, ff, vocab, batch * context, heads, checkpointing)
        if total <= budget:
            best = (layers, d, p, total)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-gib", type=float, default=24)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=1, help="sequences per rank per micro-batch")
    ap.add_argument("--vocab", type=int, default=50257)
    args = ap.parse_args()
    budget = args.budget_gib * GIB
    print(f"budget {args.budget_gib:g} GiB per rank, context {args.context}, {args.batch} sequence(s) per rank, "
          f"vocab {args.vocab}, fp32 + AdamW")
    print("| machines | scheme | checkpointing | largest GPT (layers x d_model) | parameters | bytes per rank |")
    print("| --- | --- | --- | --- | --- | --- |")
    for ranks in (1, 8, 64):
        for scheme in ("one process",) if ranks == 1 else ("DDP", "ZeRO-1", "ZeRO-2"):
            for ckpt in (False, True):
                r = largest(budget, ranks, scheme, args.context, args.batch, args.vocab, ckpt)
                name = scheme
                if r is None:
                    print(f"| {ranks} | {name} | {'on' if ckpt else 'off'} | none | | |")
                    continue
                layers, d, p, total = r
                print(f"| {ranks} | {name} | {'on' if ckpt else 'off'} | {layers} x {d} | {p / 1e9:.2f} B | "
                      f"{total / GIB:.1f} GiB |")


if __name__ == "__main__":
    main()
