#!/usr/bin/env bash
# A fresh GPU host's first use and every GPU test, in one call, from the project root (after
# ../shared/tools/gpu-bundle.sh here):
#   bash bench/verify-gpu.sh OUT
# OUT/first-use.txt: wall seconds of `bitonic demo` on the machine's empty kernel cache (what a
# newcomer meets), then again with the cache it filled; OUT/gpu-tests.log: every test
# executable with the GPU required (.gpu/run-tests.sh), and its summary lines in
# OUT/gpu-tests.txt.
set -uo pipefail
out=${1:?usage: bash bench/verify-gpu.sh OUT}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"
.gpu/bin/bitonic --version >> "$out/gpu.txt"
for round in cold warm; do
  t0=$(date +%s.%N)
  .gpu/bin/bitonic demo > "$out/first-use-demo-$round.log" 2>&1
  rc=$?
  echo "bitonic demo, $round cache: $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s (exit $rc)" | tee -a "$out/first-use.txt"
done
t0=$SECONDS
timeout "${TESTS_TIMEOUT:-480}" bash .gpu/run-tests.sh > "$out/gpu-tests.log" 2>&1
rc=$?
{
  echo "every GPU test executable, BITONIC_REQUIRE_GPU=1: exit $rc in $((SECONDS - t0)) s"
  grep -E "^== |test result|FAILED|panicked" "$out/gpu-tests.log"
} | tee "$out/gpu-tests.txt"
exit $rc
