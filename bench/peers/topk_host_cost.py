"""Where a top-k call's time goes from Python, on CUDA tensors: host microseconds to queue one
call (20 calls queued, then the stream drained; the median of 12 such batches, as
``python -m bitonic.bench`` measures it) through
``bitonic.topk`` (the package's Python), through the bare native call on ready descriptions of
the tensors (the Rust side: checks, plan, launches), and through ``torch.topk``; then the time a call of
50 queued back to back (CUDA events), for the same three. A call whose host time exceeds its
GPU time is bound by the host when called in a loop.

    python3 bench/peers/topk_host_cost.py > host-cost.txt
"""
import torch

import bitonic
from bitonic import _native, _tensors
from bitonic.bench import _host_us
from peer_timing import per_call_ms


def enqueue_us(f):
    """Host microseconds to queue one call: 20 calls a batch, the median of 12 batches
    (python -m bitonic.bench's own measure)."""
    return _host_us(torch, f, batches=12, calls=20)


def back_to_back_us(f):
    """Microseconds a call of 50 queued back to back."""
    return per_call_ms(f, 50) * 1e3


def main():
    s = torch.cuda.current_stream().cuda_stream or 1
    describe = _tensors.lib("torch").describe  # what bitonic.topk passes the native call
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for rows, n in ((64, 128256), (1, 128256), (4096, 32768)):
        for dt in (torch.float32, torch.bfloat16):
            x = torch.randn(rows, n, device="cuda").to(dt)
            for k in (1, 50, 256, 1024):
                out = torch.empty(rows, k, device="cuda", dtype=dt)
                oi = torch.empty(rows, k, dtype=torch.int64, device="cuda")
                ck, co, coi = describe(x, s), describe(out, s), describe(oi, s)
                calls = (
                    lambda: bitonic.topk(x, k),
                    lambda: _native.cuda_topk(ck, co, coi, n, k, True, s),
                    lambda: torch.topk(x, k),
                )
                for f in calls:
                    f()
                    f()
                host = [enqueue_us(f) for f in calls]
                loop = [back_to_back_us(f) for f in calls]
                print(f"{rows}x{n} {str(dt)[6:]:8} k={k:<5} host us: py {host[0]:6.1f} native "
                      f"{host[1]:6.1f} torch {host[2]:6.1f} | per call back-to-back us: py "
                      f"{loop[0]:6.1f} native {loop[1]:6.1f} torch {loop[2]:6.1f}", flush=True)


if __name__ == "__main__":
    main()
