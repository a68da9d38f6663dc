#!/usr/bin/env bash
# Session 20, call 6, at the final library commit, as a newcomer meets it: an empty kernel cache.
# The Python package's first calls (bench/first-use-python.sh, the wheel's precompiled kernels),
# the CLI's first top-k (bench/first-topk.sh) and every module compiled side by side.
set -u
L=/tmp/X6; mkdir -p $L
save() { tar czf $OUT/X6.tgz -C $L . ; }
t0=$SECONDS
nvidia-smi > $L/host.txt 2>&1
rm -rf ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
echo "commit $(cat .gpu/commit); $(.gpu/bin/bitonic --version)" | tee $L/versions.txt
site=/tmp/bitonic-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/*.whl
PYTHONPATH=$site bash bench/first-use-python.sh 2 > $L/first-use-python.jsonl 2> $L/first-use-python.log
cat $L/first-use-python.jsonl
echo "python done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
bash bench/first-topk.sh 2>&1 | tee $L/first-topk.txt
echo "first-topk done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
cache=$(mktemp -d)
HOME=$(mktemp -d) BITONIC_CACHE_DIR=$cache timeout 200 .gpu/bin/bitonic compile --csv $L/compile-side-by-side.csv > $L/compile-side-by-side.txt 2>&1
tail -n 1 $L/compile-side-by-side.txt
echo "all done at $((SECONDS - t0)) s" | tee -a $L/times.txt; save
