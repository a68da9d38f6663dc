#!/usr/bin/env bash
# compute-sanitizer (memcheck and racecheck) over the multiway merge levels, on a GPU host:
#   bash bench/sanitize-merge.sh [BIN]
# `bitonic bench` sorts 2^17 random keys with the merge sort forced from one tile up
# (merge.above) and each number of ways, and checks the result sorted: eight runs of u32
# (2^14) or 32 of u64 (2^12, each in a tile of its own: merge.wide_run_bits_above) make four-,
# eight- and sixteen-way levels and two-way tails, odd and even numbers of levels (merge.fold_ways=2
# keeps the plans as they read; bench/sanitize-sorts.sh runs folded plans, at the policy's own).
set -uo pipefail
bin=${1:-.gpu/bin/bitonic}
tmp=$(mktemp -d)
status=0
for tool in memcheck racecheck; do
  for dtype in u32 u64; do
    for ways in 4 8 16; do
      log="$tmp/$tool-$dtype-$ways.log"
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" bench --dtype "$dtype" --versions tuned \
        --no-cpu --no-end-to-end --min-exp 17 --max-exp 17 --repeats 1 -o "$tmp/out" \
        --policy "merge.ways=$ways,merge.wide_ways=$ways,merge.fold_ways=2,merge.above=8192,merge.wide_above=8192,merge.wide_run_bits_above=8192" > "$log" 2>&1
      rc=$?
      echo "$tool $dtype merge.ways=$ways: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
      [ $rc -eq 0 ] || { status=1; tail -20 "$log"; }
    done
  done
done
# The key-value levels (argsort, key-value sort) of one row of 300,001 u32 keys: runs of 2^14, in
# four- and sixteen-way levels of tagged words.
for tool in memcheck racecheck; do
  for ways in 4 16; do
    log="$tmp/$tool-kv-$ways.log"
    compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" bench-rows --shapes 1x300001 --repeats 1 \
      -o "$tmp/out" --policy "merge.wide_ways=$ways,merge.fold_ways=2" > "$log" 2>&1
    rc=$?
    echo "$tool key-value merge.wide_ways=$ways: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
    [ $rc -eq 0 ] || { status=1; tail -20 "$log"; }
  done
done
rm -rf "$tmp"
exit $status
