#!/usr/bin/env bash
# The README's results in one run on a GPU host, from the project root (after
# ../shared/tools/gpu-bundle.sh and bench/pack-python.sh here):
#   bash bench/readme-results.sh OUT
# OUT/sort: the sort of one array, V0-V5, tuned, CUB, torch, cupy and the CPU at 2^20 .. 2^26
# u32 keys (bench/run-gpu.sh); OUT/rows: row sorts beside CUB and torch (bench/run-rows.sh);
# OUT/topk: top-k beside torch.topk (bench/run-topk.sh); OUT/python-bench.csv: the Python calls
# beside torch (python -m bitonic.bench, the wheel of bench/pack-python.sh); OUT/host: host
# slices of 2^29 and (with the host memory) 2^34 u32 keys through the GPU beside the link and
# rayon (bitonic bench-large); OUT/sample-python-calls.csv: bitonic.sample beside the torch
# reference path, and beside FlashInfer where .whl/ holds its wheel and those it needs (only
# they: they are installed ahead of the system's packages); FlashInfer compiles its kernels on
# first use, so this step comes last. Then, here:
#   python3 bench/readme-tables.py docs/results/<date>-<commit>-<device>
set -uo pipefail
out=${1:?usage: bash bench/readme-results.sh OUT}
mkdir -p "$out"
status=0
step() { # name, then the command; its output in OUT/NAME.log
  local name=$1
  shift
  local t0=$SECONDS
  "$@" > "$out/$name.log" 2>&1 || { echo "$name failed:"; tail -20 "$out/$name.log"; status=1; }
  echo "$name: $((SECONDS - t0)) s"
}
step sort env MIN_EXP=20 MAX_EXP=26 REPEATS=7 BENCH_ARGS="--cpu-max-exp 24 --no-end-to-end" \
  bash bench/run-gpu.sh "$out/sort"
step rows env REPEATS=7 bash bench/run-rows.sh "$out/rows"
step topk env REPEATS=7 KS=1,50,256,1024 DTYPES=f32,bf16 \
  SHAPES="64x128256 256x151936 4096x32768 16384x1024 1x16777216" bash bench/run-topk.sh "$out/topk"
. "$(dirname "$0")/provenance.sh" # bin
# 2^34 keys (64 GiB) where the host has the memory for them and a little more.
lens=2^29
[ "$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)" -ge 72 ] && lens=2^29,2^34
step host "$bin" bench-large --len $lens --rayon-up-to 2^29 --repeats 3 -o "$out/host"
if [ -d .gpu/wheel ]; then
  site=/tmp/bitonic-site
  [ -d "$site/bitonic" ] || python3 -m pip install --quiet --no-index --no-deps --target "$site" .gpu/wheel/*.whl
  step python env PYTHONPATH="$site" python3 -m bitonic.bench --repeats 7 --csv "$out/python-bench.csv"
  fisite=/tmp/flashinfer-site
  if ls .whl/flashinfer*.whl > /dev/null 2>&1 && [ ! -d "$fisite/flashinfer" ]; then
    python3 -m pip install --quiet --no-index --no-deps --no-compile --target "$fisite" .whl/*.whl
  fi
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
  [ "$arch" = 9.0 ] && arch=9.0a # FlashInfer's Hopper kernels (other GPUs: the compute capability as it is)
  step sample env PYTHONPATH="$site:$fisite" FLASHINFER_WORKSPACE_BASE=/tmp/flashinfer \
    FLASHINFER_CUDA_ARCH_LIST="$arch" python3 bench/peers/sample_python_calls.py \
    --csv "$out/sample-python-calls.csv" --commit "${commit:0:7}"
fi
exit $status
