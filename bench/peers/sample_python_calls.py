"""Sampling from Python as a decode loop calls it (issue 52): `calls` calls back to back on one
CUDA tensor of logits, timed by CUDA events around all of them, the time a call their mean; the
median over repeats, each on fresh logits (normal, made before the start event), after one
warm-up round (which also lets FlashInfer compile). Each peer draws its own random numbers.

Peers, where they import:
- bitonic.sample;
- the PyTorch reference path, as vLLM's sampler writes it: min-p by a softmax and a mask, top-k
  and top-p by a sort of the row, a cumulative sum and masks, then a softmax and an
  exponential race (`probs / Exp(1)`, argmax), which needs no wait on the host;
- FlashInfer 0.6's `top_k_top_p_sampling_from_logits`, and `top_p_sampling_from_probs` and
  `min_p_sampling_from_probs` after a softmax (the softmax timed with them).

    python3 bench/peers/sample_python_calls.py --csv OUT.csv [--calls 50] [--repeats 7]
        [--dtypes f32,bf16] [--batches 1,8,64,256] [--vocabs 128256,151936] [--commit C]

CSV columns: peer, device, dtype, batch, vocab, filters, ms_per_call (median), min, max,
repeats, calls, commit.
"""
import csv

import torch

import bitonic
from peer_timing import calls_parser, commit_of, device_and_driver, time_peers

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# The three settings.
FILTERS = {
    "top_k=50 top_p=0.9": dict(top_k=50, top_p=0.9),
    "top_p=0.9": dict(top_p=0.9),
    "min_p=0.1": dict(min_p=0.1),
}


def torch_reference(logits, top_k=None, top_p=None, min_p=None):
    """vLLM's PyTorch sampling path (min-p, then top-k and top-p by a sort, then a draw)."""
    logits = logits.float()
    if min_p is not None:
        probs = logits.softmax(-1)
        logits = logits.masked_fill(probs < min_p * probs.amax(-1, keepdim=True), -float("inf"))
    if top_k is not None or top_p is not None:
        ascending, order = logits.sort(-1)
        if top_k is not None:
            kth = ascending[:, -top_k:-top_k + 1] if top_k > 1 else ascending[:, -1:]
            ascending = ascending.masked_fill(ascending < kth, -float("inf"))
        if top_p is not None:
            running = ascending.softmax(-1).cumsum(-1)
            drop = running <= 1 - top_p
            drop[:, -1] = False
            ascending = ascending.masked_fill(drop, -float("inf"))
        logits = ascending.scatter(-1, order, ascending)
    probs = logits.softmax(-1)
    return probs.div_(torch.empty_like(probs).exponential_()).argmax(-1)


def peers():
    out = {
        "bitonic": lambda x, f: bitonic.sample(x, **f),
        "torch reference": lambda x, f: torch_reference(x, **f),
    }
    try:
        import flashinfer.sampling as fs
    except Exception as e:  # noqa: BLE001 - any failure: measured without it, and said so
        print(f"# flashinfer does not import ({e.__class__.__name__}: {e}): not measured")
        return out

    def flashinfer(x, f):
        if "top_k" in f:
            return fs.top_k_top_p_sampling_from_logits(x, f["top_k"], f["top_p"])
        probs = torch.softmax(x, -1, dtype=torch.float32)
        if "top_p" in f:
            return fs.top_p_sampling_from_probs(probs, f["top_p"])
        return fs.min_p_sampling_from_probs(probs, f["min_p"])

    out["flashinfer"] = flashinfer
    return out


def main():
    p = calls_parser(__doc__.split("\n\n")[0], 50)
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--batches", default="1,8,64,256")
    p.add_argument("--vocabs", default="128256,151936")
    a = p.parse_args()
    device, driver = device_and_driver()
    commit = commit_of(a.commit)
    funcs = peers()
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["peer", "device", "dtype", "batch", "vocab", "filters", "ms_per_call", "min",
                    "max", "repeats", "calls", "commit"])
        for vocab in (int(v) for v in a.vocabs.split(",")):
            for batch in (int(b) for b in a.batches.split(",")):
                for name in a.dtypes.split(","):
                    for label, filters in FILTERS.items():
                        line = time_peers(
                            w, funcs,
                            lambda: (torch.randn(batch, vocab, device="cuda") * 3).to(DTYPES[name]),
                            lambda fn, x: fn(x, filters), [name, batch, vocab, label], a, commit,
                            f"{device} (CUDA {driver})")
                        f.flush()
                        print(f"{name:4} {batch}x{vocab} {label:18} {line}", flush=True)


if __name__ == "__main__":
    main()
