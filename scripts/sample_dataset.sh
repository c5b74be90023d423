#!/usr/bin/env bash
# The sample dataset of the quick start: real video (the clips shipped with
# Debian's python3-imageio, plus the four test clips in
# tests/fixtures/videos_src) with a 20BN-style label list, ingested through
# ffmpeg into OUT. scripts/run_sample.sh runs it with the release build; the
# test of the documentation's examples runs it to make build/sample_dataset,
# the path the documentation's Python examples read.
#   scripts/sample_dataset.sh GULPDB OUT
set -euo pipefail
gulpdb=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(dirname "$out")/sample_videos
media=/usr/lib/python3/dist-packages/imageio/resources/images

# A 20BN-style label list over the sample videos (one file per id).
rm -rf "$out" "$src"
mkdir -p "$src"
cp "$root"/tests/fixtures/videos_src/10[0-3]/*.mp4 "$src/"
cp "$media/cockatoo.mp4" "$media/realshort.mp4" "$src/"
cat >"$src/labels.json" <<'JSON'
[{"id": "cockatoo", "label": "bird"}, {"id": "realshort", "label": "street"},
 {"id": "100", "label": "pattern"}, {"id": "101", "label": "pattern"},
 {"id": "102", "label": "pattern"}, {"id": "103", "label": "pattern"}]
JSON
"$gulpdb" ingest "$out" --videos-dir "$src" --labels "$src/labels.json" \
  --frame-rate 8 --frame-size 240 --videos-per-chunk 2
