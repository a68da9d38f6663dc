#!/usr/bin/env bash
# A newcomer's first GPU use: each command run with an empty kernel cache (cold), then again
# with the cache it filled (warm); wall seconds to CSV. Then NVRTC's time per kernel module,
# one at a time and side by side (`bitonic compile`).
#   bench/cold-start.sh BITONIC_BINARY OUT_DIR
set -euo pipefail
bin=$(realpath "$1")
out=$2
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" gen "$work/u32.raw" -n 2^24 --dtype u32
"$bin" gen "$work/f32.raw" -n 2^24 --dtype f32
"$bin" gen "$work/u64.raw" -n 2^24 --dtype u64
"$bin" gen "$work/small.raw" -n 2^20 --dtype u32
cases=(
  "demo|demo"
  "demo u64|demo --dtype u64"
  "sort u32 2^24|sort $work/u32.raw -o $work/out --force"
  "sort u32 2^20|sort $work/small.raw -o $work/out --force"
  "sort u64 2^24|sort $work/u64.raw --dtype u64 -o $work/out --force"
  "argsort f32 2^24|sort $work/f32.raw --dtype f32 --argsort -o $work/out --force"
  "argsort u64 2^24|sort $work/u64.raw --dtype u64 --argsort -o $work/out --force"
  "rows f32 4096x4096|sort $work/f32.raw --dtype f32 --rows 4096 -o $work/out --force"
  "argsort rows f32 4096x4096|sort $work/f32.raw --dtype f32 --rows 4096 --argsort -o $work/out --force"
)
now() { date +%s.%N; }
echo "case,cold_s,warm_s" > "$out/cold-start.csv"
for c in "${cases[@]}"; do
  name=${c%%|*}; cmd=${c#*|}
  cache=$(mktemp -d)
  # A fresh home too: NVRTC 12.9+ keeps a cache of its own there (a new user has none).
  home=$(mktemp -d)
  t0=$(now); HOME=$home BITONIC_CACHE_DIR=$cache "$bin" $cmd > "$out/log-${name//[^A-Za-z0-9]/_}.txt" 2>&1; t1=$(now)
  HOME=$home BITONIC_CACHE_DIR=$cache "$bin" $cmd >> "$out/log-${name//[^A-Za-z0-9]/_}.txt" 2>&1; t2=$(now)
  rm -rf "$cache" "$home"
  cold=$(python3 -c "print(round($t1 - $t0, 2))"); warm=$(python3 -c "print(round($t2 - $t1, 2))")
  echo "$name,$cold,$warm" | tee -a "$out/cold-start.csv"
done
cache=$(mktemp -d)
HOME=$(mktemp -d) BITONIC_CACHE_DIR=$cache "$bin" compile --one-at-a-time --csv "$out/compile-one-at-a-time.csv" 2>&1 | tee "$out/compile-one-at-a-time.txt"
rm -rf "$cache"; cache=$(mktemp -d)
HOME=$(mktemp -d) BITONIC_CACHE_DIR=$cache "$bin" compile --csv "$out/compile-side-by-side.csv" 2>&1 | tee "$out/compile-side-by-side.txt"
rm -rf "$cache"
