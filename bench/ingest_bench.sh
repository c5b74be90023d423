#!/usr/bin/env bash
# Ingest throughput against baselines measured in the same run:
#   (a) frame folders, `gulpdb ingest --keep-jpeg`  vs  `cp -r` of the same files
#   (b) videos, `gulpdb ingest` (ffmpeg decode, gulpdb JPEG encode)
#       vs  ffmpeg alone writing JPEG files (`-vf fps=8 -q:v 2`), same worker count
# Baseline and gulpdb runs alternate; each figure is the median of --runs runs
# (wall and CPU time); ratios are baseline time / gulpdb time (1.0 = as fast as
# the baseline). Inputs are generated deterministically
# from ffmpeg's test sources. Prints a table and one JSON line.
#
#   ingest_bench.sh [--smoke] [--runs N] [--videos N] [--workers N] [GULPDB]
# GULPDB defaults to build/release/cli/gulpdb, then `gulpdb` on PATH.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
smoke=0 runs=5 videos=32 workers=$(nproc) gulpdb=""
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --runs) runs=$2; shift ;;
    --videos) videos=$2; shift ;;
    --workers) workers=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) gulpdb=$1 ;;
  esac
  shift
done
if [ -z "$gulpdb" ]; then
  gulpdb=$here/../build/release/cli/gulpdb
  [ -x "$gulpdb" ] || gulpdb=$(command -v gulpdb)
fi
seconds=4 size=640x480 copies=4
if [ "$smoke" -eq 1 ]; then runs=1 videos=2 seconds=1 size=160x120 copies=1; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- inputs ---------------------------------------------------------------------
# H.264 videos of alternating test patterns, each starting at a different offset.
mkdir -p "$tmp/videos" "$tmp/frames"
for i in $(seq -w 1 "$videos"); do
  pattern=testsrc
  [ $((10#$i % 2)) -eq 0 ] && pattern=testsrc2
  ffmpeg -nostdin -v error -f lavfi -i "$pattern=size=$size:rate=25" -ss "$((10#$i % 7))" \
    -t "$seconds" -c:v libx264 -preset veryfast -pix_fmt yuv420p -threads 1 -bitexact \
    "$tmp/videos/v$i.mp4"
done
# Frame folders: the videos' frames at 8 fps as JPEG, repeated `copies` times
# (hard links) so that the copy baseline takes long enough to time.
for v in "$tmp"/videos/*.mp4; do
  id=$(basename "$v" .mp4)
  mkdir "$tmp/frames/${id}_0"
  ffmpeg -nostdin -v error -i "$v" -vf fps=8 -q:v 2 "$tmp/frames/${id}_0/%05d.jpg"
  for c in $(seq 1 $((copies - 1))); do
    mkdir "$tmp/frames/${id}_$c" && ln "$tmp/frames/${id}_0"/*.jpg "$tmp/frames/${id}_$c/"
  done
done
frame_videos=$(find "$tmp/frames" -mindepth 1 -maxdepth 1 -type d | wc -l)
frame_files=$(find "$tmp/frames" -name '*.jpg' | wc -l)
frame_mb=$(du -smL "$tmp/frames" | cut -f1)

# Times a baseline and gulpdb alternately, `runs` times each, so that a change
# of machine load hits both alike. Each side is a shell function run after an
# untimed cleanup; bash's `time` gives wall and CPU time (user + system of
# every process it waited for, ffmpeg children included). Sets <prefix>_wall and
# <prefix>_cpu for each side to the median.
time_pair() {  # time_pair PREFIX_A FUNC_A PREFIX_B FUNC_B CLEANUP
  local TIMEFORMAT='%R %U %S'
  local a=$1 fa=$2 b=$3 fb=$4 cleanup=$5
  : >"$tmp/t_$a"
  : >"$tmp/t_$b"
  for _ in $(seq 1 "$runs"); do
    for side in "$a:$fa" "$b:$fb"; do
      "$cleanup"
      { time "${side#*:}" >/dev/null 2>"$tmp/stderr"; } 2>"$tmp/t_one" || { cat "$tmp/stderr"; exit 1; }
      awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$tmp/t_one" >>"$tmp/t_${side%%:*}"
    done
  done
  for p in "$a" "$b"; do
    printf -v "${p}_wall" '%s' "$(median 1 "$tmp/t_$p")"
    printf -v "${p}_cpu" '%s' "$(median 2 "$tmp/t_$p")"
  done
}
median() { sort -g -k"$1" "$2" | awk -v k="$1" '{ t[NR] = $k } END { print t[int((NR + 1) / 2)] }'; }
rate() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# Warm the page cache so that every run reads from memory.
cat "$tmp"/frames/*/*.jpg "$tmp"/videos/*.mp4 >/dev/null

# ---- (a) frame folders ----------------------------------------------------------------
clean() { rm -rf "$tmp/copy" "$tmp/ds" "$tmp/ffout"; }
copy_frames() { cp -r "$tmp/frames" "$tmp/copy"; }
ingest_frames() {
  "$gulpdb" ingest "$tmp/ds" --frames-dir "$tmp/frames" --keep-jpeg --num-workers "$workers" --quiet
}
time_pair copy copy_frames frames ingest_frames clean
stored=$("$gulpdb" info "$tmp/ds" --json | sed -n 's/.*"frames": \([0-9]*\).*/\1/p')
[ "$stored" == "$frame_files" ] || { echo "ingest_bench: stored $stored of $frame_files frames" >&2; exit 1; }

# ---- (b) videos ------------------------------------------------------------------------
ffmpeg_jpegs() {
  find "$tmp/videos" -name '*.mp4' -print0 | xargs -0 -P "$workers" -I{} sh -c \
    'out="$1/$(basename "$2" .mp4)"; mkdir -p "$out" &&
     ffmpeg -nostdin -v error -i "$2" -vf fps=8 -q:v 2 "$out/%05d.jpg"' _ "$tmp/ffout" {}
}
ingest_videos() {
  "$gulpdb" ingest "$tmp/ds" --videos-dir "$tmp/videos" --num-workers "$workers" --quiet
}
time_pair ffmpeg ffmpeg_jpegs videos ingest_videos clean
stored=$("$gulpdb" info "$tmp/ds" --json | sed -n 's/.*"frames": \([0-9]*\).*/\1/p')
clean
ffmpeg_jpegs
video_frames=$(find "$tmp/ffout" -name '*.jpg' | wc -l)
if [ "$stored" != "$video_frames" ]; then
  echo "ingest_bench: gulpdb stored $stored frames, ffmpeg wrote $video_frames" >&2
  exit 1
fi

# ---- report ----------------------------------------------------------------------------
line() {  # line LABEL WALL CPU VIDEOS FRAMES [RATIO_TEXT]
  printf '    %-26s %7.3f s wall %7.3f s cpu  %7s videos/s %8s frames/s  %s\n' "$1" "$2" "$3" \
    "$(rate "$4" "$2")" "$(rate "$5" "$2")" "${6:-}"
}
echo "ingest_bench: $workers workers, median of $runs runs, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf '(a) %d frame folders, %d JPEG files, %d MB\n' "$frame_videos" "$frame_files" "$frame_mb"
line "cp -r" "$copy_wall" "$copy_cpu" "$frame_videos" "$frame_files"
line "gulpdb ingest --keep-jpeg" "$frames_wall" "$frames_cpu" "$frame_videos" "$frame_files" \
  "$(ratio "$copy_wall" "$frames_wall")x cp (wall), $(ratio "$copy_cpu" "$frames_cpu")x (cpu)"
printf '(b) %d H.264 videos of %ss at %s, %d frames at 8 fps\n' "$videos" "$seconds" "$size" \
  "$video_frames"
line "ffmpeg -> JPEG files" "$ffmpeg_wall" "$ffmpeg_cpu" "$videos" "$video_frames"
line "gulpdb ingest" "$videos_wall" "$videos_cpu" "$videos" "$video_frames" \
  "$(ratio "$ffmpeg_wall" "$videos_wall")x ffmpeg (wall), $(ratio "$ffmpeg_cpu" "$videos_cpu")x (cpu)"
printf '{"bench": "ingest", "workers": %d, "runs": %d, "copy_s": %s, "frames_ingest_s": %s, ' \
  "$workers" "$runs" "$copy_wall" "$frames_wall"
printf '"frames_ratio": %s, "ffmpeg_s": %s, "videos_ingest_s": %s, "videos_ratio": %s, ' \
  "$(ratio "$copy_wall" "$frames_wall")" "$ffmpeg_wall" "$videos_wall" \
  "$(ratio "$ffmpeg_wall" "$videos_wall")"
printf '"videos_cpu_ratio": %s}\n' "$(ratio "$ffmpeg_cpu" "$videos_cpu")"
