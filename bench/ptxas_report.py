#!/usr/bin/env python3
"""Registers and spills of every kernel in a kernels/*.cu file, from NVRTC (no nvcc needed):
    LD_LIBRARY_PATH=<folder of libnvrtc.so> python3 bench/ptxas_report.py \
        crates/bitonic/kernels/tuned.cu sm_90 $(bitonic info | sed -n 's/^kernel defines: //p')
Compiles as src/cuda/nvrtc.rs does (headers from the kernels folder, the host's -D defines,
which `bitonic info` prints) with ptxas in verbose mode and prints ptxas's lines for each
kernel: registers, spill stores and loads, stack."""
import ctypes, re, sys
from pathlib import Path

path = Path(sys.argv[1])
arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90"
defines = sys.argv[3:]
source = path.read_text()
nvrtc = ctypes.CDLL("libnvrtc.so")
prog = ctypes.c_void_p()
check = lambda status, what: status == 0 or sys.exit(f"{what} failed: {status}")
check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), path.name.encode(), 0, None, None), "create")
opts = [f"--gpu-architecture={arch}", "--std=c++17", "--extra-device-vectorization", "--ptxas-options=--verbose",
        f"-I{path.parent}"] + defines
status = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(prog, log)
text = log.value.decode()
check(status, "compile:\n" + text)
for line in text.splitlines():
    if re.search(r"Compiling entry|registers|spill", line):
        print(line.strip())
