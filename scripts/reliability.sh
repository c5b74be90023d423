#!/usr/bin/env bash
# The reliability suite's long mode (tests/reliability, tests/fuzz):
#   scripts/reliability.sh [--preset dev|asan-ubsan] [--fuzz-seconds N]
# builds the preset, then runs
#   - crash torture: 500 SIGKILLs of a writer at random moments and at every
#     named point of the commit path, verifying the dataset after each;
#   - load: one writer appending 10,000 videos, 4 reader processes, 8 reader
#     threads and a process exporting .gmeta files over and over;
#   - hostile input: 5,000 damaged copies of a dataset;
#   - every libFuzzer target for N seconds (default 600), two at a time;
# and prints each part's figures. The quick modes of the same programs run in
# the test suite (scripts/test.sh). Takes about an hour on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=dev
fuzz_seconds=600
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
    *) echo "usage: scripts/reliability.sh [--preset dev|asan-ubsan] [--fuzz-seconds N]" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)" --target gulpdb_torture gulpdb_load gulpdb_hostile
bin=build/$preset/tests/reliability
log=build/$preset/reliability
mkdir -p "$log"
status=0
run() {
  local name=$1; shift
  echo "== $name: $*"
  local start=$SECONDS
  if "$@" 2>&1 | tee "$log/$name.txt"; then
    echo "== $name: passed in $((SECONDS - start)) s"
  else
    echo "== $name: FAILED after $((SECONDS - start)) s (log: $log/$name.txt)"
    status=1
  fi
}
run torture "$bin/gulpdb_torture" --kills 500
run load "$bin/gulpdb_load" --videos 10000
run hostile "$bin/gulpdb_hostile" --trials 5000
run fuzz bash scripts/fuzz.sh "$fuzz_seconds"
exit $status
