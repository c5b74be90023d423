#!/usr/bin/env bash
# Fuzzes one target for a while (the fuzz_<target> CTest entries of the fuzz
# preset). The corpus is a scratch copy of the committed seeds and
# regressions, so fuzzing never changes the source tree. Exits non-zero when
# libFuzzer finds a crash, a sanitizer report, a timeout or an out-of-memory
# input; that input is kept as ARTIFACT_DIR/<target>-crash-<sha1> (or
# -timeout-, -oom-, -leak-). FUZZ_DIR/<target>.dict (gmeta.dict for both
# .gmeta targets) is the libFuzzer dictionary.
#
#   run_fuzzer.sh FUZZER FUZZ_DIR TARGET SECONDS ARTIFACT_DIR [LIBFUZZER_FLAG...]
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: $0 FUZZER FUZZ_DIR TARGET SECONDS ARTIFACT_DIR [FLAG...]" >&2; exit 2; }
fuzzer=$1 fuzz_dir=$2 target=$3 seconds=$4 artifacts=$5
shift 5

work=$(mktemp -d "${TMPDIR:-/tmp}/gulpdb_fuzz_${target}.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
seeds=("$fuzz_dir/corpus/$target"/*)
[ -e "${seeds[0]}" ] || { echo "no seed corpus in $fuzz_dir/corpus/$target" >&2; exit 1; }
cp "${seeds[@]}" "$work/corpus/"
if [ -d "$fuzz_dir/regressions/$target" ]; then
  for f in "$fuzz_dir/regressions/$target"/*; do
    [ -f "$f" ] && cp "$f" "$work/corpus/regression-$(basename "$f")"
  done
fi

dict=()
case "$target" in
  gmeta_*) dict=(-dict="$fuzz_dir/gmeta.dict") ;;
  *) [ -f "$fuzz_dir/$target.dict" ] && dict=(-dict="$fuzz_dir/$target.dict") ;;
esac

# -timeout: one input taking this long is a finding (inputs take milliseconds).
# -rss_limit_mb: also the malloc limit; far above what any input needs.
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/$target-" "${dict[@]}" "$@" "$work/corpus" || status=$?
if [ "$status" -ne 0 ]; then
  echo "fuzz $target: libFuzzer exited with $status; the input is in $artifacts/" >&2
  exit 1
fi
