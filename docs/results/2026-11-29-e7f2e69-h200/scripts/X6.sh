#!/usr/bin/env bash
# Session 21, call 6, at e7f2e69 (a4bae23's library but comments; its kernels' SASS compared
# identical here): every single-GPU Rust test executable, three at a time, the GPU required
# (kv_sort's in-place test now checks bf16, f64, 8-byte indices and rows of one key).
set -u
L=/tmp/X6; mkdir -p $L/tests
save() { tar czf $OUT/X6.tgz -C $L . ; }
( while sleep 20; do save; done ) & p=$!
{ nvidia-smi -L; echo "commit $(cat .gpu/commit)"; date -u; } > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
ls .gpu/tests/* | BITONIC_REQUIRE_GPU=1 RUST_BACKTRACE=1 timeout 170 xargs -P 3 -I{} sh -c 'n=$(basename {}); {} --test-threads=1 > '$L'/tests/$n.log 2>&1; echo "$n rc=$?" >> '$L'/tests/rust-summary.txt'
grep -h "^test result" $L/tests/*.log | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}' >> $L/tests/rust-summary.txt
kill $p; save; cat $L/tests/rust-summary.txt
