#!/usr/bin/env bash
# Session 21, call 3, at the final library commit (a4bae23): the README's results (bench/readme-results.sh).
set -u
L=/tmp/X3; mkdir -p $L
save() { tar czf $OUT/X3.tgz -C $L . ; }
nvidia-smi > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
echo "commit $(cat .gpu/commit); $(.gpu/bin/bitonic --version)" | tee $L/versions.txt
( while sleep 30; do save; done ) &
p=$!
bash bench/readme-results.sh $L/readme 2>&1 | tee $L/readme.log
kill $p; save
