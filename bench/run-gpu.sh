#!/usr/bin/env bash
# The sort table (last kept: docs/results/2026-11-26-f178845-h100) on a GPU host in one command,
# from the project root:
#   bench/pack-gpu.sh                    (here: packs the release binary into .gpu/)
#   bash bench/run-gpu.sh OUT_DIR        (on the GPU host)
# Measures our versions, the CPU sorts, CUB (radix and merge sort), torch.sort and cupy.sort on
# the same sizes, then merges everything into OUT_DIR/report.md and the figures.
# A run kept in the repository goes to docs/results/<YYYY-MM-DD>-<commit>-<device>/ (the date of the
# run, the 7-digit commit measured, h100, h200, h200x2, cpu, ...) with an about.md whose first
# line says what was measured and by which script; python3 bench/results-index.py then
# rewrites docs/results/README.md.
set -euo pipefail
out=${1:-bench-results}
min_exp=${MIN_EXP:-15}
max_exp=${MAX_EXP:-29}
repeats=${REPEATS:-5}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
# Figures need a TrueType font; matplotlib ships DejaVu Sans.
if [ -z "${BITONIC_FONT:-}" ]; then
  BITONIC_FONT=$(python3 -c 'import matplotlib, os; print(os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data/fonts/ttf/DejaVuSans.ttf"))' 2>/dev/null || true)
  export BITONIC_FONT
fi

echo "== CUB peer"
nvcc -O3 -std=c++17 -arch=sm_90 -o "$out/cub_sort" bench/peers/cub_sort.cu
{ echo "$("$bin" report --csv-header)"; "$out/cub_sort" "$min_exp" "$max_exp" "$repeats" "$commit" "$date"; } > "$out/cub.csv"
rm -f "$out/cub_sort" # the peer's binary is no result
echo "== torch / cupy peer"
{ echo "$("$bin" report --csv-header)"; PYTHONUNBUFFERED=1 python3 bench/peers/torch_cupy.py "$min_exp" "$max_exp" "$repeats" "$commit" "$date"; } > "$out/torch_cupy.csv"
echo "== bitonic"
"$bin" bench --min-exp "$min_exp" --max-exp "$max_exp" --repeats "$repeats" \
  --peers "$out/cub.csv,$out/torch_cupy.csv" -o "$out" ${BENCH_ARGS:-}
