#!/usr/bin/env bash
# Issue 51's row argsorts packed in the pair passes: A/B against the base build, every test,
# the sanitizers over the new test, the Python suite.
set -u
L=/tmp/X1; rm -rf $L; mkdir -p $L/tests $L/ab $L/sanitizer
save() { tar czf $OUT/X1.tgz -C $L . 2>/dev/null; }
(while sleep 30; do save; done) & saver=$!
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu && tar xzf .gpu/abbins.tgz -C .gpu
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "commit $(cat .gpu/commit)"; date -u; } > $L/device.txt
S=65536x256,16384x1024,4096x4096,1024x16384,32768x512,8192x2048,1x16777216
PAIRS=radix.from_row_len=18446744073709551615
for round in 1 2; do
for side in base new; do
  bin=.gpu/base/bitonic; [ $side = new ] && bin=.gpu/bin/bitonic
  $bin bench-rows --repeats 20 --shapes $S -o $L/ab/$side-$round > $L/ab/$side-$round.log 2>&1
  $bin bench-rows --repeats 20 --shapes 4096x4096,1024x16384,256x65536 --policy $PAIRS -o $L/ab/$side-pairs-$round > $L/ab/$side-pairs-$round.log 2>&1
done
done
save
echo "ab done $(date -u)" >> $L/device.txt
K=$(ls .gpu/tests/kv_sort-*)
(BITONIC_REQUIRE_GPU=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 9 $K --exact gpu_pair_passes_in_place --test-threads=1 > $L/sanitizer/memcheck.log 2>&1; echo "memcheck rc=$?" >> $L/sanitizer/summary.txt) &
(BITONIC_REQUIRE_GPU=1 timeout 280 compute-sanitizer --tool racecheck --error-exitcode 9 $K --exact gpu_pair_passes_in_place --test-threads=1 > $L/sanitizer/racecheck.log 2>&1; echo "racecheck rc=$?" >> $L/sanitizer/summary.txt) &
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} --test-threads=1 > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
save
grep -h "^test result" $L/tests/*.log | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' >> $L/tests/rust-summary.txt
if [ -f .gpu/run-python.sh ]; then BENCH=0 OUT=$L/tests timeout 200 bash .gpu/run-python.sh > $L/tests/python.log 2>&1; echo "python rc=$?" >> $L/tests/rust-summary.txt; fi
wait
kill $saver; save
cat $L/tests/rust-summary.txt $L/sanitizer/summary.txt; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $L/sanitizer/*.log
