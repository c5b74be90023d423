#!/usr/bin/env bash
# Quick start (1): set up, build, and run the main job on the bundled sample:
# ingest 22 short videos (folders of real JPEG frames + a 20BN-style CSV) into
# a new dataset, then show what it holds and read a video back by id.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gulpdb -j"$(nproc)" >/dev/null
gulpdb=build/release/cli/gulpdb
out=${1:-build/sample_dataset}
rm -rf "$out"
set -x
"$gulpdb" ingest "$out" --frames-dir tests/fixtures/frames_src \
  --labels tests/fixtures/frames_src/labels.csv --videos-per-chunk 4
"$gulpdb" info "$out"
"$gulpdb" ls "$out" --limit 5 --meta
"$gulpdb" show "$out" 2
"$gulpdb" extract "$out" 2 -o "$out/extracted" --frames 0:4:2
