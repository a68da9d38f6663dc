#!/usr/bin/env bash
# The top-k table on a GPU host in one command, from the project root:
#   bench/pack-gpu.sh                    (here: packs the release binary into .gpu/)
#   bash bench/run-topk.sh OUT_DIR       (on the GPU host)
# Times our top-k (the k largest of every row, sorted, with indices; f32 and bf16 keys,
# DTYPES to change, device-resident)
# beside torch.topk(sorted=True) on the same shapes; writes OUT_DIR/topk.md.
set -euo pipefail
out=${1:-bench-results}
repeats=${REPEATS:-20}
ks=${KS:-1,8,50,256,1024}
dtypes=${DTYPES:-f32,bf16}
shapes=${SHAPES:-64x128256 256x151936 4096x32768 16384x1024 1x16777216 1x268435456}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
header=$("$bin" bench-topk --csv-header)
echo "== torch"
{ echo "$header"; PYTHONUNBUFFERED=1 python3 bench/peers/torch_topk.py "$repeats" "$commit" "$date" "$dtypes" "$ks" $shapes; } > "$out/torch_topk.csv"
echo "== bitonic"
"$bin" bench-topk --repeats "$repeats" --ks "$ks" --dtypes "$dtypes" --shapes "$(echo $shapes | tr ' ' ,)" \
  --peers "$out/torch_topk.csv" -o "$out"
