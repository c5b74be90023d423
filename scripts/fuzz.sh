#!/usr/bin/env bash
# Builds the fuzz preset (clang, libFuzzer, ASan + UBSan) and fuzzes every
# target (docs/fuzzing.md) for SECONDS each, two at a time, then prints
# per target: executions, executions per second, corpus size and the inputs
# that crashed (kept with their logs under build/fuzz/fuzz-runs/<time>/).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     SECONDS defaults to 600
#
# Each target starts from a copy of its committed corpus and regressions and
# keeps fuzzing after a finding (libFuzzer stops at one; it is restarted on
# the grown corpus until the time is used). Exits 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gmeta_parse gmeta_import record jpeg selection)

bash scripts/setup.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2

root=$PWD
bin=$root/build/fuzz/tests/fuzz
runs=$root/build/fuzz/fuzz-runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$runs"

# Fuzzes one target for `seconds`, restarting libFuzzer after each finding.
fuzz_one() {
  local target=$1 dir=$runs/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$root/tests/fuzz/corpus/$target"/* "$dir/corpus/"
  if [ -d "$root/tests/fuzz/regressions/$target" ]; then
    for f in "$root/tests/fuzz/regressions/$target"/*; do
      [ -f "$f" ] && cp "$f" "$dir/corpus/regression-$(basename "$f")"
    done
  fi
  local dict=()
  case "$target" in
    gmeta_*) dict=(-dict="$root/tests/fuzz/gmeta.dict") ;;
    *) [ -f "$root/tests/fuzz/$target.dict" ] && dict=(-dict="$root/tests/fuzz/$target.dict") ;;
  esac
  local start=$SECONDS run=0 left
  while left=$((seconds - (SECONDS - start))); [ "$left" -ge 5 ]; do
    run=$((run + 1))
    "$bin/${target}_fuzzer" -max_total_time="$left" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" "$dir/corpus" \
      >"$dir/run-$run.log" 2>&1 || true
  done
  local elapsed=$((SECONDS - start))
  local execs
  # libFuzzer prints its final stats at the end of a run, crash or not.
  execs=$(cat "$dir"/run-*.log | awk '/^stat::number_of_executed_units:/ {s += $2} END {print s + 0}')
  local findings corpus_files corpus_bytes
  findings=$(find "$dir/artifacts" -type f | wc -l)
  corpus_files=$(find "$dir/corpus" -type f | wc -l)
  corpus_bytes=$(du -sb "$dir/corpus" | cut -f1)
  printf '%-13s %10s execs %8s exec/s  corpus %5s files %8s bytes  crashes %s  (%s s, %s runs)\n' \
    "$target" "$execs" "$((execs / (elapsed > 0 ? elapsed : 1)))" "$corpus_files" \
    "$corpus_bytes" "$findings" "$elapsed" "$run" >"$dir/summary"
}

# Two at a time: one per core.
pids=()
for target in "${targets[@]}"; do
  if [ ${#pids[@]} -ge 2 ]; then
    wait -n || true
    pids=($(jobs -pr))
  fi
  fuzz_one "$target" &
  pids+=($!)
done
wait || true

echo "fuzz results ($seconds s per target; logs, corpora and crash inputs in $runs):"
crashed=0
for target in "${targets[@]}"; do
  cat "$runs/$target/summary"
  for f in "$runs/$target/artifacts"/*; do
    [ -f "$f" ] || continue
    crashed=1
    echo "    $f"
  done
done
exit "$crashed"
