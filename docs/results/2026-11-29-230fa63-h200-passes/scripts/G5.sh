#!/usr/bin/env bash
# Session 22, call 5 (after the final run; no library change): where the u32 sort of 2^18 keys
# spends its time, 82f6362 against 230fa63, under ncu (11 passes of one timed sort).
set -u
L=/tmp/G5; rm -rf $L; mkdir -p $L
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic && tar xzf .gpu/base82cache.tgz -C ~/.cache/bitonic && tar xzf .gpu/base82.tgz -C .gpu
{ nvidia-smi -L; .gpu/bin/bitonic --version; .gpu/base/bitonic --version; } > $L/device.txt
for side in base bin; do
  timeout 100 ncu --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy -k regex:tuned_pass --launch-skip 11 --launch-count 11 --csv --page details .gpu/$side/bitonic bench --dtype u32 --versions tuned --no-cpu --no-end-to-end --repeats 1 --min-exp 18 --max-exp 18 -o $L/out-$side > $L/ncu-$side.csv 2> $L/ncu-$side.err
  echo "$side rc=$?" >> $L/device.txt
done
tar czf $OUT/G5.tgz -C $L .
cat $L/device.txt
