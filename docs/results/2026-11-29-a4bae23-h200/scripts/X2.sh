#!/usr/bin/env bash
# a4bae23: every single-GPU test, the sanitizers over the in-place pair passes, the Python suite;
# then the warp sort's top-k at k = the row (a data point) and ncu over the row passes.
set -u
L=/tmp/X2; rm -rf $L; mkdir -p $L/tests $L/sanitizer $L/warp $L/ncu
save() { tar czf $OUT/X2.tgz -C $L . 2>/dev/null; }
(while sleep 30; do save; done) & saver=$!
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "commit $(cat .gpu/commit)"; date -u; } > $L/device.txt
K=$(ls .gpu/tests/kv_sort-*)
(BITONIC_REQUIRE_GPU=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 $K --exact pair_passes_for_the_sanitizer --test-threads=1 > $L/sanitizer/memcheck.log 2>&1; echo "memcheck rc=$?" >> $L/sanitizer/summary.txt) &
(BITONIC_REQUIRE_GPU=1 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $K --exact pair_passes_for_the_sanitizer --test-threads=1 > $L/sanitizer/racecheck.log 2>&1; echo "racecheck rc=$?" >> $L/sanitizer/summary.txt) &
(BENCH=0 OUT=$L/tests timeout 250 bash .gpu/run-python.sh > $L/tests/python.log 2>&1; echo "python rc=$?" >> $L/tests/python-summary.txt) &
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} --test-threads=1 > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
grep -h "^test result" $L/tests/*.log | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' >> $L/tests/rust-summary.txt
save
wait $(jobs -p | grep -v "^$saver$") 2>/dev/null
echo "tests done $(date -u)" >> $L/device.txt
save
.gpu/bin/bitonic bench-topk --repeats 10 --ks 256 --dtypes f32 --shapes 65536x256 -o $L/warp/k256 > $L/warp/k256.log 2>&1
.gpu/bin/bitonic bench-topk --repeats 10 --ks 1024 --dtypes f32 --shapes 16384x1024 -o $L/warp/k1024 > $L/warp/k1024.log 2>&1
save
timeout 150 ncu --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy -k regex:tuned_pass --launch-count 6 --csv --page details .gpu/bin/bitonic bench-rows --repeats 1 --shapes 65536x256 -o $L/ncu/rows > $L/ncu/rows-65536x256.csv 2> $L/ncu/ncu.err
kill $saver; save
cat $L/tests/rust-summary.txt $L/tests/python-summary.txt $L/sanitizer/summary.txt; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $L/sanitizer/*.log; tail -n 3 $L/tests/python-gpu-tests.log
