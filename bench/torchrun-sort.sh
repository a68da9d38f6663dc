#!/usr/bin/env bash
# bitonic.distributed.sort with 2 and 4 processes, one a GPU, started by torchrun on one host
# (issue 53). Needs the bitonic wheel installed beside torch; writes one CSV line a run.
#   bash bench/torchrun-sort.sh OUT.csv [KEYS=2^28] [DTYPE=int32] [COMMIT] [VALUES]
# VALUES, a dtype (int32, int64), sorts pairs: the keys with values of it.
set -euo pipefail
out=${1:?the CSV to write}
keys=${2:-2^28}
dtype=${3:-int32}
commit=${4:-}
values=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
echo "ranks,device,dtype,keys,ms_distributed,min,max,ms_one_gpu,repeats,commit,ms_all_to_all" > "$out"
for n in 2 4; do
  if [ "$n" -gt "$gpus" ]; then
    echo "# $n processes need $n GPUs; this host has $gpus: not run"
    continue
  fi
  PYTHONPATH="$here/peers${PYTHONPATH:+:$PYTHONPATH}" torchrun --standalone --nproc-per-node "$n" \
    "$here/peers/distributed_sort.py" --csv "$out" --keys "$keys" --dtype "$dtype" ${commit:+--commit "$commit"} \
    ${values:+--values "$values"}
done
