#!/usr/bin/env bash
# Session 22, call 4, at the final library commit: the README's results (bench/readme-results.sh)
# on a quiet GPU; then, side by side, every single-GPU Rust test executable (the GPU required),
# the Python suite, both sanitizer scripts and memcheck over the top-k sanitizer test.
set -u
L=/tmp/F4; rm -rf $L; mkdir -p $L/tests $L/sanitizer
t0=$SECONDS
save() { tar czf $OUT/F4.tgz -C $L . 2>/dev/null; }
(while sleep 20; do save; done) & saver=$!
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "commit $(cat .gpu/commit)"; .gpu/bin/bitonic --version; date -u; } > $L/device.txt
cp $L/device.txt $L/versions.txt
bash bench/readme-results.sh $L/readme > $L/readme.log 2>&1
echo "readme rc=$? at $((SECONDS - t0)) s" >> $L/device.txt
save
( timeout 180 bash bench/sanitize-sorts.sh > $L/sanitizer/sanitize-sorts.txt 2>&1; echo "exit $?" >> $L/sanitizer/sanitize-sorts.txt ) &
( timeout 180 bash bench/sanitize-merge.sh > $L/sanitizer/sanitize-merge.txt 2>&1; echo "exit $?" >> $L/sanitizer/sanitize-merge.txt ) &
( tk=$(ls .gpu/tests/topk-* | head -1); BITONIC_REQUIRE_GPU=1 timeout 180 compute-sanitizer --tool memcheck --error-exitcode 9 $tk --exact topk_for_the_sanitizer --test-threads=1 > $L/sanitizer/memcheck-topk.log 2>&1; echo "memcheck topk_for_the_sanitizer: exit $?" >> $L/sanitizer/summary.txt ) &
( BENCH=0 OUT=$L/tests timeout 180 bash .gpu/run-python.sh > $L/tests/python.log 2>&1; echo "python rc=$?" >> $L/tests/python-summary.txt ) &
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 timeout 180 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} --test-threads=1 > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
grep -h "^test result" $L/tests/*.log | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' >> $L/tests/rust-summary.txt
echo "rust done at $((SECONDS - t0)) s" >> $L/device.txt
save
wait $(jobs -p | grep -v "^$saver$") 2>/dev/null
PYTHONPATH=/tmp/bitonic-site:bench/peers timeout 60 python3 bench/peers/sort_python_calls.py --csv $L/python-sorts.csv --commit $(cat .gpu/commit) > $L/python-sorts.log 2>&1
echo "all done at $((SECONDS - t0)) s" >> $L/device.txt
kill $saver; save
cat $L/device.txt; tail -n 12 $L/readme.log; cat $L/tests/rust-summary.txt | grep -v "rc=0"; cat $L/tests/python-summary.txt; tail -n 1 $L/tests/python-gpu-tests.log 2>/dev/null; grep -c "exit 0" $L/sanitizer/sanitize-sorts.txt; grep -v "exit 0" $L/sanitizer/sanitize-sorts.txt | head -5; grep -v "exit 0" $L/sanitizer/sanitize-merge.txt | head -5; cat $L/sanitizer/summary.txt; grep "ERROR SUMMARY" $L/sanitizer/memcheck-topk.log
