"""Where the host time of a small call from Python goes, on a 1 x 256 float32 CUDA tensor: each
step the package's Python path takes (the output tensors, the descriptions, the stream, a
gather), the bare native calls on ready descriptions, the package's calls, and torch's own
calls, as host microseconds to queue one call (``python -m bitonic.bench``'s measure: calls
queued in batches, the stream drained between them, the median batch). Three rounds, one line
a case and round, so that the spread between rounds shows.

    python3 bench/peers/host_cost_parts.py > host-cost-parts.txt
"""
import torch

import bitonic
from bitonic import _native, _tensors, _torch_ops
from bitonic.bench import _host_us


def main():
    T = _tensors.lib("torch")
    x = torch.rand(1, 256, device="cuda")
    s = T.stream(x)
    keys = x.clone()
    idx = torch.empty(1, 256, dtype=torch.int64, device="cuda")
    out = torch.empty(1, 8, device="cuda")
    oi = torch.empty(1, 8, dtype=torch.int64, device="cuda")
    dk, di, do, doi = (T.describe(t, s) for t in (keys, idx, out, oi))
    cases = {
        "step: x.clone()": lambda: x.clone(),
        "step: new_empty int64": lambda: x.new_empty((1, 256), dtype=torch.int64),
        "step: describe": lambda: T.describe(x, s),
        "step: capsule (torch._C._to_dlpack)": lambda: torch._C._to_dlpack(x),
        "step: stream": lambda: T.stream(x),
        "step: detach": lambda: x.detach(),
        "step: torch.compiler.is_compiling": lambda: torch.compiler.is_compiling(),
        "step: torch.gather": lambda: torch.gather(x, -1, idx),
        "native: argsort (cuda_sort with indices)": lambda: _native.cuda_sort(dk, di, 256, False, s),
        "native: sort keys (cuda_sort)": lambda: _native.cuda_sort(dk, None, 256, False, s),
        "native: topk k=8 (cuda_topk)": lambda: _native.cuda_topk(dk, do, doi, 256, 8, True, s),
        "layer: _tensors.topk k=8 (the CUDA path)": lambda: _tensors.topk(T, x, 8, -1, True),
        "layer: _torch_ops.topk k=8 (+ operator check)": lambda: _torch_ops.topk(x, 8, -1, True, "auto"),
        "bitonic.sort": lambda: bitonic.sort(x),
        "bitonic.argsort": lambda: bitonic.argsort(x),
        "bitonic.sort_values": lambda: bitonic.sort_values(x),
        "bitonic.topk k=8": lambda: bitonic.topk(x, 8),
        "torch.sort": lambda: torch.sort(x),
        "torch.sort stable": lambda: torch.sort(x, stable=True),
        "torch.argsort": lambda: torch.argsort(x),
        "torch.topk k=8": lambda: torch.topk(x, 8),
    }
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, host us a call, 1x256 float32")
    for f in cases.values():
        f()
    for r in range(3):
        for name, f in cases.items():
            print(f"round {r}  {name:42} {_host_us(torch, f, batches=12, calls=100):7.2f}", flush=True)


if __name__ == "__main__":
    main()
