#!/usr/bin/env bash
# Session 20, call 7, at the final library commit (df82d55: the radix sorts' last stores through
# SortableMap::key_of): every single-GPU Rust test executable (three at a time, GPU required),
# memcheck over the top-k sanitizer test (its large k sorts by radix), the Python tests.
set -u
L=/tmp/X7; mkdir -p $L/tests
save() { tar czf $OUT/X7.tgz -C $L . ; }
t0=$SECONDS
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
echo "commit $(cat .gpu/commit); $(.gpu/bin/bitonic --version)" | tee $L/versions.txt
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
echo "rust: $(grep -c 'rc=0' $L/tests/rust-summary.txt) of $(wc -l < $L/tests/rust-summary.txt) executables passed" | tee -a $L/times.txt
cat $L/tests/*.log | grep -E '^test result' | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' | tee -a $L/times.txt
echo "tests done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
tk=$(ls .gpu/tests/topk-* | head -1)
BITONIC_REQUIRE_GPU=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $tk --exact topk_for_the_sanitizer --test-threads=1 > $L/memcheck-topk.log 2>&1
echo "memcheck topk_for_the_sanitizer: exit $?, $(grep -h 'SUMMARY' $L/memcheck-topk.log | tail -1)" | tee -a $L/times.txt; save
BENCH=0 OUT=$L/tests timeout 120 bash .gpu/run-python.sh > $L/tests/python-run.log 2>&1
tail -n 1 $L/tests/python-gpu-tests.log | tee -a $L/times.txt
echo "all done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
