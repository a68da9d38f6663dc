#!/usr/bin/env bash
# Session 21, call 5 (library as at a4bae23, its wheel): issue 51's Python table,
# bench/peers/sort_python_calls.py on its shapes beside torch.sort and torch.argsort.
set -u
L=/tmp/X5; mkdir -p $L
save() { tar czf $OUT/X5.tgz -C $L . ; }
{ nvidia-smi -L; echo "commit $(cat .gpu/commit)"; date -u; } > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
site=/tmp/bitonic-site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/*.whl
PYTHONPATH=$site:bench/peers timeout 200 python3 bench/peers/sort_python_calls.py --csv $L/python-sorts.csv --commit a4bae23 > $L/python-sorts.log 2>&1
echo "rc=$?" >> $L/python-sorts.log
save; tail -n 40 $L/python-sorts.log
