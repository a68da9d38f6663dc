#!/usr/bin/env bash
# Session 22, call 1: measurements at 7bf41ff. Keys-only rows: network passes against the
# radix passes without indices (policy A/B); issue 49's check against 82f6362 (ab-issue49.sh);
# the 2^15 keys-only sort's kernel time under ncu, base and new; Python's sorts (sort_values).
set -u
L=/tmp/A1; rm -rf $L; mkdir -p $L/rows $L/ncu
save() { tar czf $OUT/A1.tgz -C $L . 2>/dev/null; }
(while sleep 20; do save; done) & saver=$!
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic && tar xzf .gpu/base82cache.tgz -C ~/.cache/bitonic
tar xzf .gpu/base82.tgz -C .gpu
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "commit $(cat .gpu/commit)"; .gpu/bin/bitonic --version; .gpu/base/bitonic --version; date -u; } > $L/device.txt
B=.gpu/bin/bitonic
SH=1024x16384,512x32768,256x65536,128x131072,64x262144,64x128256,256x151936,4096x4096
NET=radix.keys_from_row_len=18446744073709551615
RAD=radix.keys_from_row_len=2
for round in 1 2; do
  $B bench-rows --repeats 20 --shapes $SH --policy $NET -o $L/rows/net$round > $L/rows/net$round.log 2>&1
  $B bench-rows --repeats 20 --shapes $SH --policy $RAD -o $L/rows/radix$round > $L/rows/radix$round.log 2>&1
done
$B bench-rows --repeats 20 --shapes $SH -o $L/rows/default > $L/rows/default.log 2>&1
save
echo "rows done $(date -u)" >> $L/device.txt
BASE=.gpu/base/bitonic NEW=$B timeout 330 bash bench/ab-issue49.sh $L/ab49 > $L/ab49.log 2>&1
echo "ab49 rc=$? $(date -u)" >> $L/device.txt
save
for side in base bin; do
  timeout 60 ncu --metrics gpu__time_duration.sum,smsp__inst_executed.sum --csv .gpu/$side/bitonic bench --dtype u32 --versions tuned --no-cpu --no-end-to-end --repeats 3 --min-exp 15 --max-exp 15 -o $L/ncu/$side > $L/ncu/$side.csv 2> $L/ncu/$side.err
done
save
site=/tmp/bitonic-site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/*.whl
PYTHONPATH=$site:bench/peers timeout 120 python3 bench/peers/sort_python_calls.py --csv $L/python-sorts.csv --commit $(cat .gpu/commit) > $L/python-sorts.log 2>&1
echo "python rc=$? $(date -u)" >> $L/device.txt
kill $saver; save
cat $L/device.txt; cat $L/ab49/ab.md 2>/dev/null | head -14; tail -n 30 $L/python-sorts.log
