#!/usr/bin/env bash
# Quick start (1): set up, build, and run the main job on a bundled sample:
# ingest real video (the clips shipped with Debian's python3-imageio, plus the
# four test clips in tests/fixtures/videos_src) into a new dataset through
# ffmpeg, then show what it holds, read a video back by id and check it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gulpdb -j"$(nproc)" >/dev/null
gulpdb=build/release/cli/gulpdb
out=${1:-build/sample_dataset}
src=build/sample_videos
media=/usr/lib/python3/dist-packages/imageio/resources/images

# A 20BN-style label list over the sample videos (one file per id).
rm -rf "$out" "$src" build/sample_frames
mkdir -p "$src"
cp tests/fixtures/videos_src/10[0-3]/*.mp4 "$src/"
cp "$media/cockatoo.mp4" "$media/realshort.mp4" "$src/"
cat >"$src/labels.json" <<'JSON'
[{"id": "cockatoo", "label": "bird"}, {"id": "realshort", "label": "street"},
 {"id": "100", "label": "pattern"}, {"id": "101", "label": "pattern"},
 {"id": "102", "label": "pattern"}, {"id": "103", "label": "pattern"}]
JSON

set -x
"$gulpdb" ingest "$out" --videos-dir "$src" --labels "$src/labels.json" \
  --frame-rate 8 --frame-size 240 --videos-per-chunk 2
"$gulpdb" info "$out"
"$gulpdb" ls "$out" --meta
"$gulpdb" show "$out" cockatoo
"$gulpdb" extract "$out" cockatoo -o build/sample_frames --frames 0:40:10
"$gulpdb" check "$out" --deep
