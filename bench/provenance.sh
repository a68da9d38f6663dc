# Sourced by the bench scripts (run-gpu, run-merge, run-rows, run-topk): the binary they time
# (.gpu/bin/bitonic from ../shared/tools/gpu-bundle.sh, else the release build) and the commit
# and date that every CSV row they write names.
bin=.gpu/bin/bitonic
[ -x "$bin" ] || bin=target/release/bitonic
commit=$("$bin" --version | sed -n 's/.*(commit \(.*\))$/\1/p')
date=$(date -u +%F)
