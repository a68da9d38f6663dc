#!/usr/bin/env bash
# Session 20, call 3: the radix stream's loads in one copy (var) against both copies (new, 54a7aad)
# and the base, on the 4,096 x 32,768 cells, alternating twice; then racecheck and memcheck over
# the top-k sanitizer test (the radix sorts' block barrier) and both sanitizer scripts.
set -u
L=/tmp/X3; mkdir -p $L/ab
save() { tar czf $OUT/X3.tgz -C $L . ; }
t0=$SECONDS
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu && tar xzf .gpu/abbins.tgz -C .gpu
echo "commit $(cat .gpu/commit); new $(.gpu/bin/bitonic --version); base $(.gpu/base/bitonic --version); var $(.gpu/var/bitonic --version)" | tee $L/versions.txt
for i in 1 2; do for side in base new var; do
  bin=.gpu/$side/bitonic; [ $side = new ] && bin=.gpu/bin/bitonic
  $bin bench-topk --repeats 20 --ks 50,256,1024 --dtypes f32,bf16 --shapes 4096x32768,256x151936 \
    -o $L/ab/$side-$i > $L/ab/$side-$i.log 2>&1 || echo "$side-$i failed"
done; done
python3 - $L/ab <<'PY' | tee $L/ab/ab.md
import csv, sys, statistics
d = sys.argv[1]
def t(side, i):
    return {(r["dtype"], r["rows"], r["row_len"], r["k"]): float(r["median_ms"]) for r in csv.DictReader(open(f"{d}/{side}-{i}/topk.csv"))}
s = {side: [t(side, i) for i in (1, 2)] for side in ("base", "new", "var")}
print("| dtype, rows x len, k | base ms | new ms | var ms | new / base | var / base |\n|---|---:|---:|---:|---:|---:|")
for key in s["new"][0]:
    m = {side: statistics.median([x[key] for x in s[side]]) for side in s}
    print(f"| {key[0]}, {key[1]} x {key[2]}, {key[3]} | {m['base']:.4f} | {m['new']:.4f} | {m['var']:.4f} | {m['new'] / m['base']:.3f} | {m['var'] / m['base']:.3f} |")
PY
echo "ab done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
( bash bench/sanitize-sorts.sh > $L/sanitize-sorts.txt 2>&1; echo "exit $?" >> $L/sanitize-sorts.txt ) &
p1=$!
( bash bench/sanitize-merge.sh > $L/sanitize-merge.txt 2>&1; echo "exit $?" >> $L/sanitize-merge.txt ) &
p2=$!
( while sleep 30; do save; done ) &
p3=$!
tk=$(ls .gpu/tests/topk-* | head -1)
for tool in racecheck memcheck synccheck; do
  BITONIC_REQUIRE_GPU=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $tk --exact topk_for_the_sanitizer --test-threads=1 > $L/$tool-topk.log 2>&1
  echo "$tool topk_for_the_sanitizer: exit $?, $(grep -h 'SUMMARY' $L/$tool-topk.log | tail -1), $(grep '^test result' $L/$tool-topk.log | tail -1)" | tee -a $L/times.txt
  save
done
wait $p1 $p2; kill $p3
tail -n 3 $L/sanitize-sorts.txt $L/sanitize-merge.txt
echo "all done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
