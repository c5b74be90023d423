#!/usr/bin/env bash
# Benchmarks: builds the release preset, generates the datasets, runs every
# benchmark against its baseline and writes bench/results/ (latest.json,
# latest.md and PNG plots).
#
#   scripts/bench.sh                  quick scale, about 2 minutes
#   scripts/bench.sh --scale full     about 20 minutes: 10^6 videos, 1 GB of .gmeta
#   scripts/bench.sh --only open,lookup --data-dir /big/scratch
#
# Options after the script name go to bench/run.py (--help lists them):
# --scale smoke|quick|full, --only, --data-dir (default build/bench-data; the
# full scale needs about 10 GB there, and sparse files of several hundred GB
# apparent size), --out, --cold-cache auto|drop|fadvise.
#
# Run it on a quiet machine: other load shows up in every figure. The cold
# cache benchmark drops the page cache with /proc/sys/vm/drop_caches when it
# may (root), which slows everything else on the machine for a moment;
# --cold-cache fadvise evicts only the benchmark's own files instead.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# strace counts the durable writes of a commit; without it the report says so.
if ! command -v strace >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "bench: installing strace (to count fsyncs per commit)" >&2
  $SUDO apt-get install -y -qq --no-install-recommends strace >/dev/null 2>&1 ||
    echo "bench: could not install strace; fsync counts will be missing" >&2
fi

cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target gulpdb_bench_all
exec /usr/bin/python3 bench/run.py --bin-dir build/release/bench "$@"
