"""What the torch peer scripts share: CUDA-event timing and the device's name and driver."""
import ctypes

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
