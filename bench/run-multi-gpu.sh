#!/usr/bin/env bash
# On a multi-GPU host, after bench/pack-gpu.sh here: the multi-GPU tests with
# every GPU of the host required, then `bitonic bench --gpus` (the scaling table and figure).
#   bash bench/run-multi-gpu.sh OUT_DIR          (GPUS=4 COUNTS=1,2,4 LEN=2^32 REPEATS=5)
# NCCL comes from the host's Python environment (the nvidia-nccl-cu13 wheel); NVLink
# multicast stays off.
set -u
cd "$(dirname "$0")/.."
out=${1:-multi-gpu-results}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
nccl=$(python3 -c "import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))")
export LD_LIBRARY_PATH=$nccl:${LD_LIBRARY_PATH:-}
python3 -m pip show nvidia-nccl-cu13 2>/dev/null | grep -i '^version'
nvidia-smi -L
nvidia-smi topo -m | head -8
start=$(date +%s)
status=0
for t in .gpu/tests/multi_gpu-* .gpu/tests/process_rank-* .gpu/tests/multi_sort-*; do
  BITONIC_REQUIRE_GPU=1 BITONIC_REQUIRE_GPUS=${GPUS:-4} timeout 300 "$t" --test-threads=1 >>"$out/multi-tests.log" 2>&1 || status=1
done
grep -E "^test |test result|panicked|SKIPPED" "$out/multi-tests.log" | head -40
echo "tests took $(( $(date +%s) - start )) s"
timeout 400 .gpu/bin/bitonic bench --gpus "${COUNTS:-1,2,4}" \
  --gpus-len "${LEN:-2^32}" --repeats "${REPEATS:-5}" -o "$out" 2>&1 | tee "$out/bench.log" | tail -60 || status=1
exit $status
