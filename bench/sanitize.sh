#!/usr/bin/env bash
# compute-sanitizer (memcheck and racecheck) over every version's kernels, on a GPU host:
#   bash bench/sanitize.sh [BIN]
# Sizes are not powers of two and larger than a block's chunk, so the block sort, the global
# steps and the block merges all run; f64 descending also runs the key-map kernels on u64 words.
set -uo pipefail
bin=${1:-.gpu/bin/bitonic}
tmp=$(mktemp -d)
status=0
"$bin" gen "$tmp/u32.bin" -n 10007 --dtype u32 --seed 3
"$bin" gen "$tmp/f64.npy" -n 5003 --dtype f64 --seed 4
for version in v0 v1 v2 v3 v4 v5; do
  for tool in memcheck racecheck; do
    for input in "u32.bin --dtype u32" "f64.npy --desc"; do
      set -- $input
      log="$tmp/$version-$tool-${1%%.*}.log"
      if compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" sort "$tmp/$1" "${@:2}" \
          -o "$tmp/out-$version-${1}" --force --backend cuda --version "$version" --quiet > "$log" 2>&1; then
        printf '%-4s %-10s %-8s %s\n' "$version" "$tool" "${1%%.*}" "$(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$log" | tr '\n' ' ')"
      else
        echo "$version $tool ${1%%.*}: FAILED"; cat "$log"; status=1
      fi
      desc=""; [ "${2:-}" = "--desc" ] && desc="--desc"
      "$bin" verify "$tmp/out-$version-${1}" $desc --permutation-of "$tmp/$1" ${2:+$( [ "$2" = "--dtype" ] && echo "--dtype u32")} >/dev/null || { echo "$version ${1}: wrong result"; status=1; }
    done
  done
done
rm -rf "$tmp"
exit $status
