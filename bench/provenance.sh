# Sourced by the bench scripts (run-gpu, run-merge, run-rows, run-topk): the binary they time
# (.gpu/bin/bitonic from ../shared/tools/gpu-bundle.sh, else the release build) and the commit
# and date that every CSV row they write names. They write into the OUT folder they are given;
# a run kept in the repository goes to docs/results/<YYYY-MM-DD>-<commit>-<device>/ (the date of the
# run, the 7-digit commit measured, h100, h200, h200x2, cpu, ...) with an about.md whose first
# line says what was measured and by which script; python3 bench/results-index.py then
# rewrites docs/results/README.md.
bin=${BIN:-.gpu/bin/bitonic}
[ -x "$bin" ] || bin=target/release/bitonic
commit=$("$bin" --version | sed -n 's/.*(commit \(.*\))$/\1/p')
date=$(date -u +%F)
