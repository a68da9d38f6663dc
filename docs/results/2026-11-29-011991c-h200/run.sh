#!/usr/bin/env bash
# Session 20, call 1: the slow top-k cells (82f6362 against this commit, alternating twice), then every
# single-GPU test, the Python tests, both sanitizer scripts and memcheck over the top-k write-outs.
set -u
L=/tmp/X1; mkdir -p $L/tests $L/ab
save() { tar czf $OUT/X1.tgz -C $L . ; }
t0=$SECONDS
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu && tar xzf .gpu/abbins.tgz -C .gpu
echo "commit $(cat .gpu/commit); new $(.gpu/bin/bitonic --version); base $(.gpu/base/bitonic --version)" | tee $L/versions.txt
# 1. the slow cells
for i in 1 2; do for side in base new; do
  bin=.gpu/base/bitonic; [ $side = new ] && bin=.gpu/bin/bitonic
  $bin bench-topk --repeats 20 --ks 50,256,1024 --dtypes f32,bf16 --shapes 4096x32768,16384x1024,256x151936,64x128256 \
    -o $L/ab/$side-$i > $L/ab/$side-$i.log 2>&1 || echo "$side-$i failed"
done; done
echo "ab done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
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
save
# 2. sanitizers in the background, beside the tests
( bash bench/sanitize-sorts.sh > $L/sanitize-sorts.txt 2>&1; echo "exit $?" >> $L/sanitize-sorts.txt ) &
p1=$!
( bash bench/sanitize-merge.sh > $L/sanitize-merge.txt 2>&1; echo "exit $?" >> $L/sanitize-merge.txt
  compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/bin/bitonic bench-topk --repeats 1 --ks 1,50,1024 \
    --dtypes f32,bf16,u64 --shapes 300x1000,4x300001,96x32768,64x131072 -o /tmp/ms-topk > $L/memcheck-topk.log 2>&1
  echo "memcheck top-k: exit $?, $(grep 'ERROR SUMMARY' $L/memcheck-topk.log | tail -1)" >> $L/sanitize-merge.txt ) &
p2=$!
( while sleep 40; do save; done ) &
p3=$!
# 3. every single-GPU test, three at a time
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
echo "rust: $(grep -c 'rc=0' $L/tests/rust-summary.txt) of $(wc -l < $L/tests/rust-summary.txt) executables passed" | tee -a $L/times.txt
cat $L/tests/*.log | grep -E '^test result' | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' | tee -a $L/times.txt
echo "tests done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
# 4. Python
BENCH=0 OUT=$L/tests timeout 150 bash .gpu/run-python.sh > $L/tests/python-run.log 2>&1
tail -n 2 $L/tests/python-gpu-tests.log | tee -a $L/times.txt
echo "python done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
wait $p1 $p2; kill $p3
echo "all done at $((SECONDS - t0)) s" | tee -a $L/times.txt; cat $L/sanitize-*.txt | tail -30; save
