#!/usr/bin/env bash
# A newcomer's first top-k on a GPU host: an empty kernel cache and NVRTC home, wall ms.
#   bash bench/first-topk.sh            (BIN=PATH for another build than .gpu/bin/bitonic)
bin=${BIN:-.gpu/bin/bitonic}
w=$(mktemp -d)
$bin gen $w/small.raw -n 1024 --dtype f32 -q 2>/dev/null || $bin gen $w/small.raw -n 1024 --dtype f32
$bin gen $w/big.raw -n 134217728 --dtype f32 >/dev/null
$bin gen $w/bigh.raw -n 134217728 --dtype bf16 >/dev/null
$bin gen $w/rows.raw -n 4194304 --dtype f32 >/dev/null
v=$($bin --version)
run() { # label cache args...
  local label=$1 cache=$2; shift 2
  local t0=$(date +%s%N); HOME=$w/home BITONIC_CACHE_DIR=$cache $bin topk "$@" --backend cuda --force -q; local rc=$?
  echo "$label, $v: rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
mkdir -p $w/home
run "first f32 top-k-50 of 1x1024 (empty cache)" $w/c1 $w/small.raw --dtype f32 -k 50 -o $w/o1
run "again f32 top-k-50 of 1x1024 (filled cache)" $w/c1 $w/small.raw --dtype f32 -k 50 -o $w/o1
rm -rf $w/home; mkdir -p $w/home
run "first f32 top-k-50 of 4096x32768 (empty cache)" $w/c2 $w/big.raw --dtype f32 --rows 4096 -k 50 -o $w/o2
rm -rf $w/home; mkdir -p $w/home
run "first bf16 top-k-1024 of 4096x32768 (empty cache)" $w/c3 $w/bigh.raw --dtype bf16 --rows 4096 -k 1024 -o $w/o3
rm -rf $w/home; mkdir -p $w/home
run "first f32 top-k-8 of 16384x256 (empty cache)" $w/c4 $w/rows.raw --dtype f32 --rows 16384 -k 8 -o $w/o4
rm -rf $w
