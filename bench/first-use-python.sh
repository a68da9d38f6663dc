#!/usr/bin/env bash
# A newcomer's first bitonic calls from Python on a GPU host, each in a new process with an
# empty kernel cache: wall seconds of torch's start-up (import, CUDA context, the input made),
# then of `import bitonic`, the first topk, the first sort and a second topk, each waited for
# (torch.cuda.synchronize). The wheel under test is installed on PYTHONPATH already
# (.gpu/run-python.sh does it). Prints one JSON line a run; ROUNDS runs (default 2).
#   bash bench/first-use-python.sh [ROUNDS] > first-use-python.jsonl
set -uo pipefail
rounds=${1:-2}
for round in $(seq "$rounds"); do
  cache=$(mktemp -d)
  BITONIC_CACHE_DIR=$cache python3 - "$round" <<'PY'
import json, os, sys, time
t0 = time.perf_counter()
import torch
x = torch.randn(4096, 32768, device="cuda")
h = torch.randn(64, 128256, device="cuda").to(torch.bfloat16)
torch.cuda.synchronize()
t1 = time.perf_counter()
import bitonic
t2 = time.perf_counter()
bitonic.topk(x, 50); torch.cuda.synchronize()
t3 = time.perf_counter()
bitonic.sort(x); torch.cuda.synchronize()
t4 = time.perf_counter()
bitonic.topk(h, 8); torch.cuda.synchronize()
t5 = time.perf_counter()
bitonic.topk(x, 50); torch.cuda.synchronize()
t6 = time.perf_counter()
cache = os.environ["BITONIC_CACHE_DIR"]
print(json.dumps(dict(
    round=int(sys.argv[1]), device=torch.cuda.get_device_name(),
    kernel_pack_archs=bitonic.info()["kernel_pack_archs"],
    torch_start_s=round(t1 - t0, 3), import_bitonic_s=round(t2 - t1, 3),
    first_topk_f32_4096x32768_k50_s=round(t3 - t2, 3),
    first_sort_f32_4096x32768_s=round(t4 - t3, 3),
    first_topk_bf16_64x128256_k8_s=round(t5 - t4, 3),
    again_topk_f32_4096x32768_k50_s=round(t6 - t5, 3),
    bitonic_beyond_torch_s=round(t5 - t1, 3),
    modules_compiled_into_cache=len(os.listdir(cache)))), flush=True)
PY
  rm -rf "$cache"
done
