#!/usr/bin/env bash
# compute-sanitizer memcheck over the command's GPU sorts (issue 22's "every key type, order and
# the awkward lengths"), on a GPU host:
#   bash bench/sanitize-sorts.sh [BIN]
# Every key type, ascending or descending, sorted or argsorted with the library's own policy at
# lengths past a power of two and between runs: merge sorts whose levels are odd (the tile sort
# writes the spare buffer) and even, u64 runs of half a tile in tiles of their own (past 2^21
# keys), the key-value merge of the argsorts, and the network's passes below the merge sort.
# Each sort is checked sorted (and a permutation of its input) by `bitonic verify`, each argsort
# by a short Python check (stable ascending order, every index once). Last, the row sorts of
# bench-rows on rows that take the radix passes.
set -uo pipefail
bin=${1:-.gpu/bin/bitonic}
tmp=$(mktemp -d)
status=0
check() { # name, then the command; prints one line, keeps the log of a failure
  local name=$1 log="$tmp/$1.log"
  shift
  "$@" > "$log" 2>&1
  local rc=$?
  echo "$name: exit $rc, $(grep -E 'ERROR SUMMARY' "$log" | tail -1)"
  [ $rc -eq 0 ] || { status=1; tail -20 "$log"; }
}
sanitize() { compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" "$@"; }
# Lengths (2^14-key u32 tiles, 2^13 u64 ones, u64 runs of 2^12 past 2^21 keys), with the levels
# they make: 300,001 (u32: the network's passes; u64: 37 tiles, levels 16, 4), 2^21 + 777 (u32:
# 129 runs, 8, 8, 4; u64: 513 runs, 16, 16, 4), 2^22 + 12,345 (u32: 257 runs, 8, 8, 8), 3 x 2^21
# + 7 (u64: 1,537 runs, 16, 16, 8), 2^23 + 5 (u32: 513 runs, 16, 8, 8: fold_ways) and 2^24 + 43 (u32: 1,025
# runs, 8, 8, 8, 4; u64: 4,097 runs, 16, 16, 16, 2): odd and even levels for both widths.
while read -r task dtype n order; do
  # Raw files: NumPy has no bf16.
  keys="$tmp/keys.raw"
  rm -f "$keys"
  "$bin" gen --dtype "$dtype" --len "$n" --seed "$n" -o "$keys" 2> /dev/null \
    || { echo "gen $dtype $n: failed"; status=1; continue; }
  flag=""; [ "$order" = desc ] && flag=--desc
  if [ "$task" = argsort ]; then
    check "argsort $dtype $n" sanitize sort --backend cuda --dtype "$dtype" --argsort --force -q \
      -o "$tmp/perm.raw" "$keys"
    check "verify argsort $dtype $n" python3 - "$keys" "$tmp/perm.raw" "$dtype" <<'PY'
# The permutation's keys ascend, equal keys by index (stable), and it holds every index once.
import array, sys
codes = {"u32": "I", "i32": "i", "f32": "f", "u64": "Q", "i64": "q", "f64": "d"}
keys = array.array(codes[sys.argv[3]], open(sys.argv[1], "rb").read())
perm = array.array("I", open(sys.argv[2], "rb").read())
assert len(perm) == len(keys), "an index a key"
seen = bytearray(len(keys))
for i in perm:
    seen[i] = 1
assert all(seen), "every index once"
for a, b in zip(perm, perm[1:]):
    assert keys[a] < keys[b] or (keys[a] == keys[b] and a < b), f"indices {a} and {b} out of order"
PY
  else
    check "sort $dtype $n $order" sanitize sort --backend cuda --dtype "$dtype" $flag --force -q \
      -o "$tmp/sorted.raw" "$keys"
    check "verify $dtype $n $order" "$bin" verify --dtype "$dtype" $flag --permutation-of "$keys" \
      "$tmp/sorted.raw"
  fi
done <<'LIST'
sort u32 4206649 asc
sort u32 16777259 desc
sort i32 8388613 asc
sort f32 2097929 desc
argsort f32 4206649 asc
sort f16 4206649 desc
sort bf16 2097929 asc
sort u64 6291463 asc
sort u64 16777259 desc
sort i64 300001 desc
argsort i64 2097929 asc
sort f64 2097929 asc
sort f64 4206649 desc
LIST
# Rows in the radix passes: keys alone (no index), the argsort and the key-value sort of u32
# rows of a length that is not a power of two, each timed once.
check "rows 3x151936 (radix passes)" sanitize bench-rows --shapes 3x151936 --repeats 1 -o "$tmp/rows"
rm -rf "$tmp"
exit $status
