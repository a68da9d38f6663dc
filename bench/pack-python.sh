#!/usr/bin/env bash
# Builds here what the GPU host needs for the Python package's GPU run, into .gpu/ (git-ignored,
# beside what bench/pack-gpu.sh packs, which it leaves alone): the abi3 wheel in .gpu/wheel/
# (as `pip install ./python` builds it) and .gpu/run-python.sh, which on the GPU host (Python
# 3.12 with torch, cupy, numpy and pytest; no network) installs the wheel into /tmp/site, runs
# python/tests with the GPU required (a GPU test fails instead of being skipped) and then
# `python -m bitonic.bench` (at most 6 + 3 minutes: one device call of 10). From the repository
# root, here and there:
#   bash bench/pack-python.sh
#   OUT=DIR bash .gpu/run-python.sh      # DIR/python-gpu-tests.log, DIR/python-bench.csv
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu/wheel && mkdir -p .gpu/wheel
if [ -n "${WHEEL:-}" ]; then
  cp "$WHEEL" .gpu/wheel/ # a wheel built already, of this commit
else
  python3 -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir .gpu/wheel ./python
fi
cat > .gpu/run-python.sh <<'RUN'
#!/usr/bin/env bash
# Written by bench/pack-python.sh. Exit status: the tests' (the benchmark runs either way).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/bitonic-python-out}
mkdir -p "$OUT"
site=/tmp/bitonic-site
rm -rf "$site"
python3 -m pip install --quiet --no-index --no-deps --target "$site" .gpu/wheel/*.whl || exit 1
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# NVRTC: the system's when the loader finds libnvrtc.so, else the nvidia-cuda-nvrtc wheel's
# (which ships only libnvrtc.so.<major>, so a libnvrtc.so link to it is made in /tmp).
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so '; then
  lib=$(python3 - <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for r in roots:
    for f in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib", "libnvrtc.so.[0-9]*"))):
        if "builtins" not in f and "alt" not in f:
            print(f); raise SystemExit
PY
)
  if [ -n "$lib" ]; then
    mkdir -p /tmp/bitonic-nvrtc && ln -sf "$lib" /tmp/bitonic-nvrtc/libnvrtc.so
    export LD_LIBRARY_PATH="/tmp/bitonic-nvrtc:$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
export BITONIC_REQUIRE_GPU=1
python3 -c 'import bitonic, json; print(json.dumps(bitonic.info()))' 2>&1 | tee "$OUT/python-info.json"
{
  echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  python3 -c 'import sys, torch, cupy, numpy; print("# python", sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "numpy", numpy.__version__)'
  timeout 360 python3 -m pytest -q -rs -p no:cacheprovider python/tests
} 2>&1 | tee "$OUT/python-gpu-tests.log"
status=${PIPESTATUS[0]}
# BENCH=0: the tests alone.
if [ "${BENCH:-1}" = 1 ]; then
  timeout 180 python3 -m bitonic.bench --csv "$OUT/python-bench.csv" 2>&1 | tee "$OUT/python-bench.txt"
fi
exit "$status"
RUN
echo "packed: .gpu/wheel/$(ls .gpu/wheel) and .gpu/run-python.sh ($(du -sh .gpu | cut -f1) in .gpu)"
