#!/usr/bin/env bash
# compute-sanitizer (memcheck and racecheck) over every version's kernels, on a GPU host:
#   bash bench/sanitize.sh [BIN]            (VERSIONS="v5 tuned" for some versions, VERSIONS= for none)
# Sizes are not powers of two and span several blocks (and several tuned tiles), so the block
# sorts, global steps, block merges and the tuned strided and merge passes all run; f64
# descending also runs the key-map kernels (and the tuned fused maps) on u64 words. On sm_90
# the two small inputs run the tuned sort as one cluster, and 300007 keys in smaller tiles.
set -uo pipefail
bin=${1:-.gpu/bin/bitonic}
tmp=$(mktemp -d)
status=0
"$bin" gen "$tmp/u32.bin" -n 70001 --dtype u32 --seed 3
"$bin" gen "$tmp/f64.npy" -n 20011 --dtype f64 --seed 4
"$bin" gen "$tmp/u32rows.bin" -n 70007 --dtype u32 --seed 5 # 7 rows of 10001
"$bin" gen "$tmp/i32.bin" -n 300007 --dtype i32 --seed 6 # tuned: passes of 2^13-key tiles
# One row: argsort as tuned tile sorts, value placement and key-value merge levels
# (kernels/merge.cu); few distinct keys take the placement of equal keys (place_equal_values).
"$bin" gen "$tmp/u32long.bin" -n 528391 --dtype u32 --seed 7
"$bin" gen "$tmp/u32few.bin" -n 100003 --dtype u32 --seed 9 --pattern few-distinct
# Past 2^22 keys: the tuned sort as tile sorts and merge levels, the key map in the tile sort's
# loads and the last level's stores.
"$bin" gen "$tmp/i32long.bin" -n 4194319 --dtype i32 --seed 8
# name, input, options for sort and verify
cases=("u32-asc $tmp/u32.bin --dtype=u32" "f64-desc $tmp/f64.npy --desc" "i32-desc $tmp/i32.bin --dtype=i32 --desc")
for version in ${VERSIONS-v0 v1 v2 v3 v4 v5 tuned}; do
  for tool in memcheck racecheck; do
    for case in "${cases[@]}"; do
      read -r name input options <<< "$case"
      out="$tmp/out-$version-$name.${input##*.}"
      log="$out.$tool.log"
      if compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" sort "$input" $options \
          -o "$out" --force --backend cuda --algo "$version" --quiet > "$log" 2>&1 \
          && "$bin" verify "$out" $options --permutation-of "$input" > /dev/null; then
        printf "%-6s %-10s %-9s %s\n" "$version" "$tool" "$name" "$(grep -h 'SUMMARY' "$log" | tr '\n' ' ')"
      else
        echo "$version $tool $name: FAILED"; cat "$log"; status=1
      fi
    done
  done
done
# Row sorts and argsorts run the tuned passes over row layouts and key-index pairs (u64 words
# for 32-bit keys, 16-byte pairs for 64-bit keys), a row's argsort the key-value merge sort,
# and a long sort of keys alone those with its key map;
# tests/kv_sort.rs checks their results.
kv_cases=("rows-u32 $tmp/u32rows.bin --dtype=u32 --rows 7" "rows-argsort-u32 $tmp/u32rows.bin --dtype=u32 --rows 7 --argsort"
          "argsort-f64-desc $tmp/f64.npy --argsort --desc" "argsort-u32-merged $tmp/u32long.bin --dtype=u32 --argsort"
          "argsort-u32-few $tmp/u32few.bin --dtype=u32 --argsort"
          "i32-desc-merged $tmp/i32long.bin --dtype=i32 --desc")
for tool in memcheck racecheck; do
  for case in "${kv_cases[@]}"; do
    read -r name input options <<< "$case"
    log="$tmp/$name.$tool.log"
    if compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" sort "$input" $options \
        -o "$tmp/out-$name.npy" --force --backend cuda --quiet > "$log" 2>&1; then
      printf "%-6s %-10s %-16s %s\n" tuned "$tool" "$name" "$(grep -h 'SUMMARY' "$log" | tr '\n' ' ')"
    else
      echo "tuned $tool $name: FAILED"; cat "$log"; status=1
    fi
  done
done
# The multi-GPU kernels (splitter searches, samples, merge paths and the tile merge of both
# algorithms, key-value packing),
# with two ranks on one GPU: the whole one-GPU multi test under memcheck, a small one under
# racecheck. Run from the project root after bench/pack-gpu.sh.
multi=$(ls .gpu/tests/multi_gpu-* 2>/dev/null | head -1)
if [ -n "$multi" ]; then
  for run in "memcheck ranks_sharing_one_gpu" "memcheck key_value_pairs" "racecheck small_sorts_for_the_sanitizer"; do
    read -r tool test <<< "$run"
    log="$tmp/multi-$test.$tool.log"
    if compute-sanitizer --tool "$tool" --error-exitcode 99 "$multi" --exact "$test" --test-threads=1 > "$log" 2>&1; then
      printf "%-6s %-10s %-16s %s\n" multi "$tool" "$test" "$(grep -h 'SUMMARY\|test result' "$log" | tr '\n' ' ')"
    else
      echo "multi $tool $test: FAILED"; tail -40 "$log"; status=1
    fi
  done
fi
# The top-k kernels (kernels/topk.cu: the filter over keys and over partials of both key
# widths, several passes, misaligned rows, the take after a sort for a large k), through the
# packed topk test, which checks the results.
topk=$(ls .gpu/tests/topk-* 2>/dev/null | head -1)
if [ -n "$topk" ]; then
  for tool in memcheck racecheck; do
    log="$tmp/topk.$tool.log"
    if BITONIC_REQUIRE_GPU=1 compute-sanitizer --tool "$tool" --error-exitcode 99 "$topk" --exact topk_for_the_sanitizer --test-threads=1 > "$log" 2>&1; then
      printf "%-6s %-10s %-16s %s\n" topk "$tool" topk_for_the_sanitizer "$(grep -h 'SUMMARY\|test result' "$log" | tr '\n' ' ')"
    else
      echo "topk $tool topk_for_the_sanitizer: FAILED"; tail -40 "$log"; status=1
    fi
  done
fi
rm -rf "$tmp"
exit $status
