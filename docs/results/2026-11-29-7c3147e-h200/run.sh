#!/usr/bin/env bash
# Session 20, call 2: the slow top-k cells (82f6362 against this commit, alternating twice), memcheck
# over the top-k selections (every kind of key, untied and tied maps), and Nsight Compute's
# details of the radix stream select (4,096 x 32,768 f32, k = 50), base and this commit.
set -u
L=/tmp/X2; mkdir -p $L/ab $L/ncu
save() { tar czf $OUT/X2.tgz -C $L . ; }
t0=$SECONDS
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu && tar xzf .gpu/abbins.tgz -C .gpu
echo "commit $(cat .gpu/commit); new $(.gpu/bin/bitonic --version); base $(.gpu/base/bitonic --version)" | tee $L/versions.txt
for i in 1 2; do for side in base new; do
  bin=.gpu/base/bitonic; [ $side = new ] && bin=.gpu/bin/bitonic
  $bin bench-topk --repeats 20 --ks 50,256,1024 --dtypes f32,bf16 --shapes 4096x32768,16384x1024,256x151936,64x128256 \
    -o $L/ab/$side-$i > $L/ab/$side-$i.log 2>&1 || echo "$side-$i failed"
done; done
python3 - $L/ab <<'PY' | tee $L/ab/ab.md
import csv, sys, statistics
d = sys.argv[1]
def t(side, i):
    return {(r["dtype"], r["rows"], r["row_len"], r["k"]): float(r["median_ms"]) for r in csv.DictReader(open(f"{d}/{side}-{i}/topk.csv"))}
b = [t("base", i) for i in (1, 2)]; n = [t("new", i) for i in (1, 2)]
print("| dtype, rows x len, k | base ms | new ms | new / base |\n|---|---:|---:|---:|")
for key in n[0]:
    bb = statistics.median([x[key] for x in b]); nn = statistics.median([x[key] for x in n])
    print(f"| {key[0]}, {key[1]} x {key[2]}, {key[3]} | {bb:.4f} | {nn:.4f} | {nn / bb:.3f} |")
PY
echo "ab done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
for side in base new; do
  bin=.gpu/base/bitonic; [ $side = new ] && bin=.gpu/bin/bitonic
  timeout 120 ncu --kernel-name topk_radix_stream_u32 --launch-skip 1 --launch-count 1 --set full -f -o $L/ncu/stream-$side \
    $bin bench-topk --repeats 1 --ks 50 --dtypes f32 --shapes 4096x32768 -o /tmp/ncu-out-$side > $L/ncu/stream-$side.log 2>&1
  ncu --import $L/ncu/stream-$side.ncu-rep --page details > $L/ncu/stream-$side-details.txt 2>&1
  ncu --import $L/ncu/stream-$side.ncu-rep --page source --csv --print-source sass > $L/ncu/stream-$side-sass.csv 2>&1
  gzip -f $L/ncu/stream-$side-sass.csv; rm -f $L/ncu/stream-$side.ncu-rep
done
echo "ncu done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/bin/bitonic bench-topk --repeats 1 --ks 1,50,1024 \
  --dtypes f32,bf16,f16 --shapes 300x1000,4x300001,96x32768,64x131072,2x1024 -o /tmp/ms-topk > $L/memcheck-topk.log 2>&1
echo "memcheck bench-topk: exit $?, $(grep 'ERROR SUMMARY' $L/memcheck-topk.log | tail -1)" | tee -a $L/times.txt
save
tk=$(ls .gpu/tests/topk-* | head -1); fo=$(ls .gpu/tests/float_order-* | head -1)
for c in "memcheck $tk --exact topk_for_the_sanitizer" "racecheck $tk --exact topk_for_the_sanitizer" \
         "memcheck $tk --exact gpu_short_rows_by_warps" "memcheck $fo"; do
  set -- $c; tool=$1; shift; name=$(echo "$tool $(basename $1) ${3:-all}" | tr ' ' '_')
  BITONIC_REQUIRE_GPU=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 "$@" --test-threads=1 > $L/$name.log 2>&1
  echo "$name: exit $?, $(grep -h 'SUMMARY' $L/$name.log | tail -1), $(grep '^test result' $L/$name.log | tail -1)" | tee -a $L/times.txt
  save
done
echo "all done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
