#!/usr/bin/env bash
# clang-format (.clang-format: Google style, 100 columns) over every C++ file
# in git.
#   scripts/format.sh           reformats the files in place
#   scripts/format.sh --check   changes nothing; lists the files that need it
#                               and exits 1 if any does (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: these files differ from clang-format's output (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  exit 0
fi
clang-format -i "${files[@]}"
