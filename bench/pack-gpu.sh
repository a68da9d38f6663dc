#!/usr/bin/env bash
# Builds here what a GPU host without a Rust toolchain runs, into .gpu/ (git-ignored): the
# release `bitonic` binary in .gpu/bin/ and every test executable in .gpu/tests/, with
# .gpu/run-tests.sh, which runs them all with the GPU required (a GPU test fails instead of
# being ignored). Copy the repository with .gpu/ to the GPU host, then there:
#   bash .gpu/run-tests.sh               every test
#   bash bench/run-gpu.sh OUT_DIR        the results tables (also run-rows.sh, cold-start.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/bin .gpu/tests
cargo build --release -p bitonic-cli
cp target/release/bitonic .gpu/bin/
# cargo names each test executable it builds: "Executable <what> (<path>)".
cargo test --release --workspace --no-run 2>&1 |
  sed -n 's/^ *Executable .*(\(.*\))$/\1/p' |
  while read -r test; do cp "$test" .gpu/tests/; done
strip .gpu/bin/* .gpu/tests/* 2>/dev/null || true # a GPU host call carries 64 MiB at most
cat > .gpu/run-tests.sh <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")/.."
export BITONIC_REQUIRE_GPU=1
failed=0
for test in .gpu/tests/*; do
  echo "== $test"
  "$test" --test-threads=1 || failed=1
done
exit $failed
RUN
echo "packed: $(ls .gpu/tests | wc -l) test executables and bin/bitonic in .gpu/ ($(du -sh .gpu | cut -f1))"
