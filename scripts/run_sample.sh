#!/usr/bin/env bash
# Quick start (1): set up, build, and run the main job on a bundled sample:
# ingest real video (the clips shipped with Debian's python3-imageio, plus the
# four test clips in tests/fixtures/videos_src) into a new dataset through
# ffmpeg, then show what it holds, read a video back by id, check it, write
# its static report (a contact sheet under build/) and print the command
# that browses it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gulpdb -j"$(nproc)" >/dev/null
gulpdb=build/release/cli/gulpdb
out=${1:-build/sample_dataset}
report=$(dirname "$out")/sample_report
rm -rf build/sample_frames "$report"

set -x
bash scripts/sample_dataset.sh "$gulpdb" "$out"
"$gulpdb" info "$out"
"$gulpdb" ls "$out" --meta
"$gulpdb" show "$out" cockatoo
"$gulpdb" extract "$out" cockatoo -o build/sample_frames --frames 0:40:10
"$gulpdb" check "$out" --deep
"$gulpdb" view "$out" --static "$report"
{ set +x; } 2>/dev/null
echo "the contact sheet: $report/index.html"
echo "browse the dataset (Ctrl-C stops): $gulpdb view $out"
