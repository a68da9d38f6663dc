#!/usr/bin/env bash
# Session 22, call 2, at the final library commit: issue 49's speed check against 82f6362
# (ab-issue49.sh) on a quiet GPU; then, side by side, every single-GPU Rust test executable
# (the GPU required), the Python suite, both sanitizer scripts and memcheck over the top-k
# sanitizer test.
set -u
L=/tmp/B2; rm -rf $L; mkdir -p $L/tests $L/sanitizer
t0=$SECONDS
save() { tar czf $OUT/B2.tgz -C $L . 2>/dev/null; }
(while sleep 20; do save; done) & saver=$!
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic && tar xzf .gpu/base82cache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu && tar xzf .gpu/base82.tgz -C .gpu
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "commit $(cat .gpu/commit)"; .gpu/bin/bitonic --version; .gpu/base/bitonic --version; date -u; } > $L/device.txt
BASE=.gpu/base/bitonic NEW=.gpu/bin/bitonic timeout 260 bash bench/ab-issue49.sh $L/ab49 > $L/ab49.log 2>&1
echo "ab49 rc=$? at $((SECONDS - t0)) s" >> $L/device.txt
save
( timeout 330 bash bench/sanitize-sorts.sh > $L/sanitizer/sanitize-sorts.txt 2>&1; echo "exit $?" >> $L/sanitizer/sanitize-sorts.txt ) &
( timeout 330 bash bench/sanitize-merge.sh > $L/sanitizer/sanitize-merge.txt 2>&1; echo "exit $?" >> $L/sanitizer/sanitize-merge.txt ) &
( tk=$(ls .gpu/tests/topk-* | head -1); BITONIC_REQUIRE_GPU=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $tk --exact topk_for_the_sanitizer --test-threads=1 > $L/sanitizer/memcheck-topk.log 2>&1; echo "memcheck topk_for_the_sanitizer: exit $?" >> $L/sanitizer/summary.txt ) &
( BENCH=0 OUT=$L/tests timeout 330 bash .gpu/run-python.sh > $L/tests/python.log 2>&1; echo "python rc=$?" >> $L/tests/python-summary.txt ) &
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 timeout 330 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} --test-threads=1 > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
grep -h "^test result" $L/tests/*.log | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' >> $L/tests/rust-summary.txt
echo "rust done at $((SECONDS - t0)) s" >> $L/device.txt
save
wait $(jobs -p | grep -v "^$saver$") 2>/dev/null
echo "all done at $((SECONDS - t0)) s" >> $L/device.txt
kill $saver; save
cat $L/device.txt; sed -n 1,14p $L/ab49/ab.md; grep "Top-k after" $L/ab49/ab.md; cat $L/tests/rust-summary.txt | grep -v "rc=0"; cat $L/tests/python-summary.txt; tail -n 2 $L/tests/python-gpu-tests.log 2>/dev/null; grep -c "exit 0" $L/sanitizer/sanitize-sorts.txt; grep -v "exit 0" $L/sanitizer/sanitize-sorts.txt | head; grep -v "exit 0" $L/sanitizer/sanitize-merge.txt | head; cat $L/sanitizer/summary.txt; grep "ERROR SUMMARY" $L/sanitizer/memcheck-topk.log
