"""What the torch peer scripts share: CUDA-event timing (one call, or calls back to back on
fresh keys), the options of the scripts that time calls back to back, and the device's name
and driver."""
import argparse
import ctypes
import statistics
import subprocess

import torch


def event_time(work):
    """Milliseconds between CUDA events recorded around `work()`."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    work()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def device_and_driver():
    """("NVIDIA H100 80GB HBM3", "13.0"): device 0's name (commas made CSV-safe) and the driver's CUDA version."""
    version = ctypes.c_int()
    ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version))
    major, minor = divmod(version.value, 1000)
    return torch.cuda.get_device_name(0).replace(",", ";"), f"{major}.{minor // 10}"


def calls_parser(description, calls):
    """The options of the scripts that time calls back to back from Python: --csv, --calls,
    --repeats and --commit."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--csv", required=True)
    p.add_argument("--calls", type=int, default=calls)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--commit", help="the commit the measured wheel was built from "
                   "(default: this checkout's HEAD, which a GPU host's copy may not have)")
    return p


def commit_of(given):
    """`given`, else this checkout's short HEAD."""
    return given or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                   capture_output=True, text=True).stdout.strip()


def per_call_ms(call, calls):
    """Milliseconds a call of `calls` calls of `call()` queued back to back (CUDA events
    around all of them)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        call()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / calls


def repeated_per_call_ms(make, call, calls, repeats):
    """`per_call_ms` of `calls` calls of `call(x)` on fresh keys `x = make()` each repeat, after
    one warm-up round of 2 calls: the times of the `repeats` timed rounds."""
    times = []
    for r in range(repeats + 1):
        x = make()
        t = per_call_ms(lambda: call(x), calls if r else 2)
        if r:
            times.append(t)
        del x
    return times


def uniform_keys(rows, row_len, dtype):
    """Fresh keys uniform in [-1, 1) of `dtype`, on the GPU."""
    return (torch.rand(rows, row_len, device="cuda") * 2 - 1).to(dtype)


def timing_cells(times, repeats, calls, commit):
    """The CSV cells after a case's own: the median, min and max of `times` (ms), the repeats,
    calls and commit; and the median."""
    med = statistics.median(times)
    return [f"{med:.5f}", f"{min(times):.5f}", f"{max(times):.5f}", repeats, calls, commit], med


def time_peers(writer, peers, make, call, case, options, commit, device):
    """Times each peer of `peers` (name -> function) on one case: `options.calls` calls of
    `call(fn, x)` back to back on fresh inputs `x = make()`, `options.repeats` times
    (`repeated_per_call_ms`). Writes a CSV row a peer (its name, `device`, the `case` cells,
    then the timing cells) and returns the console's words, each peer's median."""
    line = []
    for peer, fn in peers.items():
        times = repeated_per_call_ms(make, lambda x: call(fn, x), options.calls, options.repeats)
        cells, med = timing_cells(times, options.repeats, options.calls, commit)
        writer.writerow([peer, device, *case] + cells)
        line.append(f"{peer} {med:.4f}")
    return "  ".join(line)
