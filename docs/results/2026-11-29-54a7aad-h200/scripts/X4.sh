#!/usr/bin/env bash
# Session 20, call 4, at the final library commit: every single-GPU Rust test executable (three at a
# time, GPU required), the Python tests (GPU required), then issue 49's speed check
# (bench/ab-issue49.sh: issue 22's nine workloads and the top-k table, 82f6362 then this commit).
set -u
L=/tmp/X4; mkdir -p $L/tests
save() { tar czf $OUT/X4.tgz -C $L . ; }
t0=$SECONDS
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu && tar xzf .gpu/abbins.tgz -C .gpu
echo "commit $(cat .gpu/commit); new $(.gpu/bin/bitonic --version); base $(.gpu/base/bitonic --version)" | tee $L/versions.txt
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
echo "rust: $(grep -c 'rc=0' $L/tests/rust-summary.txt) of $(wc -l < $L/tests/rust-summary.txt) executables passed" | tee -a $L/times.txt
cat $L/tests/*.log | grep -E '^test result' | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' | tee -a $L/times.txt
echo "tests done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
BENCH=0 OUT=$L/tests timeout 150 bash .gpu/run-python.sh > $L/tests/python-run.log 2>&1
tail -n 1 $L/tests/python-gpu-tests.log | tee -a $L/times.txt
echo "python done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
( while sleep 30; do save; done ) &
p3=$!
bash bench/ab-issue49.sh $L/ab49 > $L/ab49.log 2>&1
echo "ab49 exit $? at $((SECONDS - t0)) s" | tee -a $L/times.txt
kill $p3; tail -n 60 $L/ab49/ab.md; save
