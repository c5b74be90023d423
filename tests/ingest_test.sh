#!/usr/bin/env bash
# End-to-end checks of `gulpdb ingest`: every source kind (videos with a JSON
# list, frame folders with a CSV, an image folder, an image list), frame
# counts against ffmpeg's own, label2idx.json and meta as GulpIO writes them,
# bad sources (skipped and reported, or --strict), --keep-jpeg byte identity,
# and an ingest killed midway that a re-run completes without duplicates.
#   ingest_test.sh GULPDB_BINARY FIXTURES_DIR
set -uo pipefail
gulpdb=$1
fixtures=$2
source "$(dirname "$0")/cli_lib.sh"
realshort=/usr/lib/python3/dist-packages/imageio/resources/images/realshort.mp4
# Frames ffmpeg itself decodes from the first video stream of FILE at 8 fps.
ffmpeg_frames() {
  ffmpeg -nostdin -v error -i "file:$1" -map 0:v:0 -vf fps=8 -f null - -progress pipe:1 |
    sed -n 's/^frame=//p' | tail -1
}
# Frames stored for ID according to LISTING, the output of `gulpdb ls` (see capture).
stored_frames() { awk -F'\t' -v id="$2" '$1 == id { print $2 }' "$1"; }
# WxH of a JPEG file.
jpeg_size() { ffprobe -v error -show_entries stream=width,height -of csv=s=x:p=0 "$1"; }

videos=$fixtures/videos_src

# ---- videos + a 20BN JSON list, extended by a second list ----------------------
ds=$tmp/videos
check video_ingest 0 "$gulpdb" ingest "$ds" --videos-dir "$videos" --labels "$videos/videos.json" \
  --label-name template --videos-per-chunk 2 --quiet
expect_out video_ingest_summary "ingested 3 videos .* 0 bad sources"
check video_extend 0 "$gulpdb" ingest "$ds" --videos-dir "$videos" \
  --labels "$videos/videos_extend.json" --label-name template --quiet
expect_out video_extend_summary "ingested 1 videos"
# label2idx.json: sorted on the first run, new labels numbered after the old ones.
check video_label2idx 0 cmp "$ds/label2idx.json" "$fixtures/gulpio2_json_videos/label2idx.json"
# Meta as GulpIO2's video adapter writes it (compared with the fixture it wrote).
cp -r "$fixtures/gulpio2_json_videos" "$tmp/gio_videos" && chmod -R u+w "$tmp/gio_videos"
check video_gulpio2_import 0 "$gulpdb" import "$tmp/gio_videos" --quiet
capture video_meta_listed "$tmp/meta_ours" "$gulpdb" ls "$ds" --meta
capture video_meta_listed_gulpio2 "$tmp/meta_gulpio2" "$gulpdb" ls "$tmp/gio_videos" --meta
expect_eq video_meta_as_gulpio2 "$(cut -f1,3 "$tmp/meta_ours" | sort)" \
  "$(cut -f1,3 "$tmp/meta_gulpio2" | sort)"
capture video_listed "$tmp/videos_listed" "$gulpdb" ls "$ds"
for id in 100 101 102 103; do
  capture "video_${id}_ffmpeg_counted" "$tmp/ffmpeg_frames" ffmpeg_frames "$videos/$id/$id.mp4"
  expect_eq "video_${id}_frames_as_ffmpeg" "$(stored_frames "$tmp/videos_listed" $id)" \
    "$(cat "$tmp/ffmpeg_frames")"
done
check video_check 0 "$gulpdb" check "$ds" --deep --quiet
check video_rerun_skips 0 "$gulpdb" ingest "$ds" --videos-dir "$videos" --labels "$videos/videos.json" \
  --label-name template --quiet
expect_out video_rerun_summary "ingested 0 videos .* 3 already present"
check video_rerun_error 1 "$gulpdb" ingest "$ds" --videos-dir "$videos" \
  --labels "$videos/videos.json" --label-name template --on-duplicate error --quiet
expect_out video_rerun_error_message "already in the dataset"

# Numeric ids, a video file named <id>.<ext>, a file name with spaces and quotes.
mkdir -p "$tmp/numeric/7" && cp "$videos/100/100.mp4" "$tmp/numeric/7/clip 'one'.mp4"
cp "$videos/101/101.mp4" "$tmp/numeric/8.mp4"
printf '[{"id": 7, "label": "b"}, {"id": 8, "label": "a"}]' >"$tmp/numeric.json"
check numeric_ids 0 "$gulpdb" ingest "$tmp/numeric_ds" --videos-dir "$tmp/numeric" \
  --labels "$tmp/numeric.json" --quiet
check numeric_id_meta 0 "$gulpdb" show "$tmp/numeric_ds" 7 --json
expect_out numeric_id_meta_text '"meta_data": \[\{"id": 7, "label": "b", "idx": 1\}\]'

# A real H.264 video (with audio), at 8 fps and resized by its short edge.
if [ -f "$realshort" ]; then
  mkdir -p "$tmp/real" && cp "$realshort" "$tmp/real/"
  check real_ingest 0 "$gulpdb" ingest "$tmp/real_ds" --videos-dir "$tmp/real" --quiet
  capture real_ffmpeg_counted "$tmp/ffmpeg_frames" ffmpeg_frames "$realshort"
  want=$(cat "$tmp/ffmpeg_frames")
  check real_ffmpeg_frames 0 test "${want:-0}" -gt 0
  capture real_listed "$tmp/real_listed" "$gulpdb" ls "$tmp/real_ds"
  expect_eq real_frames_as_ffmpeg "$(stored_frames "$tmp/real_listed" realshort)" "$want"
  check real_resized 0 "$gulpdb" ingest "$tmp/real_small" --videos-dir "$tmp/real" --frame-size 120 \
    --quiet
  check real_extract 0 "$gulpdb" extract "$tmp/real_small" realshort -o "$tmp/real_frames" --frames 0
  expect_eq real_short_edge "$(jpeg_size "$tmp/real_frames/realshort_00000.jpg")" 160x120
  check real_check 0 "$gulpdb" check "$tmp/real_ds" --deep --quiet
else
  echo "SKIP real_video: $realshort is absent (not counted as passed)"
fi

# ---- frame folders + a 20BN CSV ------------------------------------------------
check frames_ingest 0 "$gulpdb" ingest "$tmp/frames" --frames-dir "$fixtures/frames_src" \
  --labels "$fixtures/frames_src/labels.csv" --quiet
expect_out frames_summary "ingested 22 videos \(67 frames\)"
check frames_label2idx 0 cmp "$tmp/frames/label2idx.json" "$fixtures/gulpio2_csv_jpeg/label2idx.json"
check frames_meta 0 "$gulpdb" show "$tmp/frames" 3 --json
expect_out frames_meta_text '"meta_data": \[\{"id": "3", "label": "square", "idx": [0-9]+\}\]'
check frames_check 0 "$gulpdb" check "$tmp/frames" --deep --quiet
# Re-encoded (the default): the stored bytes are not the source bytes.
check frames_extract 0 "$gulpdb" extract "$tmp/frames" 0 -o "$tmp/reenc"
check frames_reencoded 1 cmp -s "$tmp/reenc/0_00001.jpg" "$fixtures/frames_src/0/0001.jpg"
# --keep-jpeg: every stored frame is byte-identical to its source file.
check keep_ingest 0 "$gulpdb" ingest "$tmp/keep" --frames-dir "$fixtures/frames_src" --keep-jpeg --quiet
keep_diff=0
mkdir -p "$tmp/keep_out"
for d in "$fixtures"/frames_src/*/; do
  id=$(basename "$d")
  "$gulpdb" extract "$tmp/keep" "$id" -o "$tmp/keep_out/$id" >/dev/null || keep_diff=1
  i=0
  for f in "$d"*.jpg; do
    cmp -s "$f" "$tmp/keep_out/$id/${id}_$(printf %05d $i).jpg" || keep_diff=1
    i=$((i + 1))
  done
done
expect_eq keep_jpeg_bytes_identical "$keep_diff" 0
check keep_with_resize_is_usage_error 2 "$gulpdb" ingest "$tmp/k2" --frames-dir "$fixtures/frames_src" \
  --keep-jpeg --frame-size 16
check frames_resized 0 "$gulpdb" ingest "$tmp/frames_small" --frames-dir "$fixtures/frames_src" \
  --frame-size 8 --quiet
check frames_small_extract 0 "$gulpdb" extract "$tmp/frames_small" 0 -o "$tmp/small_out" --frames 0
src_size=$(jpeg_size "$fixtures/frames_src/0/0000.jpg")
w=${src_size%x*} h=${src_size#*x}
if [ "$h" -lt "$w" ]; then want="$((8 * w / h))x8"; else want="8x$((8 * h / w))"; fi
expect_eq frames_short_edge "$(jpeg_size "$tmp/small_out/0_00000.jpg")" "$want"

# Shuffling with a seed is reproducible and changes the order (of the same 22 ids).
check shuffle_ingest_1 0 "$gulpdb" ingest "$tmp/sh1" --frames-dir "$fixtures/frames_src" --shuffle \
  --seed 7 -q
check shuffle_ingest_2 0 "$gulpdb" ingest "$tmp/sh2" --frames-dir "$fixtures/frames_src" --shuffle \
  --seed 7 -q
capture shuffle_listed_1 "$tmp/sh1_listed" "$gulpdb" ls "$tmp/sh1"
capture shuffle_listed_2 "$tmp/sh2_listed" "$gulpdb" ls "$tmp/sh2"
capture unshuffled_listed "$tmp/keep_listed" "$gulpdb" ls "$tmp/keep"
cut -f1 "$tmp/sh1_listed" >"$tmp/sh1_ids"
cut -f1 "$tmp/sh2_listed" >"$tmp/sh2_ids"
cut -f1 "$tmp/keep_listed" >"$tmp/keep_ids"
expect_eq shuffle_every_video "$(wc -l <"$tmp/sh1_ids")" 22
expect_eq shuffle_same_ids "$(sort "$tmp/sh1_ids")" "$(sort "$tmp/keep_ids")"
check shuffle_reproducible 0 cmp "$tmp/sh1_ids" "$tmp/sh2_ids"
check shuffle_changes_order 1 cmp -s "$tmp/sh1_ids" "$tmp/keep_ids"

# ---- an image folder and an image list -------------------------------------------
mkdir -p "$tmp/imgs/cat" "$tmp/imgs/dog/more"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/imgs/cat/a.jpg"
cp "$fixtures/frames_src/1/0000.jpg" "$tmp/imgs/dog/more/b.JPG"
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=40x30 -frames:v 1 "$tmp/imgs/dog/c.png"
check images_ingest 0 "$gulpdb" ingest "$tmp/images" --images-dir "$tmp/imgs" --quiet
expect_out images_summary "ingested 3 videos \(3 frames\)"
check images_meta 0 "$gulpdb" show "$tmp/images" dog/more/b.JPG --json
expect_out images_meta_text '"meta_data": \[\{"id": "dog/more/b.JPG", "label": "dog", "idx": 1\}\]'
check images_label2idx 0 grep -qx '{"cat": 0, "dog": 1}' "$tmp/images/label2idx.json"
check images_extract 0 "$gulpdb" extract "$tmp/images" dog/c.png -o "$tmp/png_out"
expect_eq images_png_size "$(jpeg_size "$tmp/png_out/$(frame_stem dog/c.png)_00000.jpg")" 40x30
printf 'cat/a.jpg;feline\ndog/c.png\n' >"$tmp/imgs/list.txt"
check image_list_ingest 0 "$gulpdb" ingest "$tmp/list" --image-list "$tmp/imgs/list.txt" --quiet
expect_out image_list_summary "ingested 2 videos"
check image_list_meta 0 "$gulpdb" ls "$tmp/list" --meta
expect_out image_list_meta_text 'cat/a.jpg.*"label": "feline", "idx": 0'
check images_check 0 "$gulpdb" check "$tmp/list" --deep --quiet

# ---- bad sources ------------------------------------------------------------------
mkdir -p "$tmp/badv"
cp "$videos/100/100.mp4" "$tmp/badv/good.mp4"
head -c 4000 "$videos/101/101.mp4" >"$tmp/badv/truncated.mp4"
check bad_videos_skipped 0 "$gulpdb" ingest "$tmp/badv_ds" --videos-dir "$tmp/badv" --quiet
expect_out bad_videos_reported "skipping 'truncated': .*truncated.mp4"
expect_out bad_videos_summary "ingested 1 videos .* 1 bad sources skipped"
check bad_videos_strict 1 "$gulpdb" ingest "$tmp/badv_strict" --videos-dir "$tmp/badv" --quiet --strict
expect_out bad_videos_strict_message "truncated.mp4"
printf '[{"id": "nowhere", "label": "x"}]' >"$tmp/missing.json"
check missing_video_skipped 0 "$gulpdb" ingest "$tmp/missing_ds" --videos-dir "$tmp/badv" \
  --labels "$tmp/missing.json" --quiet
expect_out missing_video_reported "skipping 'nowhere': find video nowhere"
mkdir -p "$tmp/badf/good" "$tmp/badf/notjpeg" "$tmp/badf/empty"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/badf/good/"
printf 'this is not a jpeg' >"$tmp/badf/notjpeg/0000.jpg"
for mode in "" --keep-jpeg; do
  check "bad_frames_skipped$mode" 0 "$gulpdb" ingest "$tmp/badf_ds$mode" --frames-dir "$tmp/badf" $mode --quiet
  expect_out "bad_frames_notjpeg_reported$mode" "skipping 'notjpeg': .*0000.jpg"
  expect_out "bad_frames_empty_reported$mode" "skipping 'empty': .*no JPEG frames"
  capture "bad_frames_listed$mode" "$tmp/badf_listed" "$gulpdb" ls "$tmp/badf_ds$mode"
  expect_eq "bad_frames_only_good$mode" "$(cut -f1 "$tmp/badf_listed")" good
done
# Sources that are symbolic links to /dev/zero, dangling or in a loop, a FIFO,
# or a frame folder with a dangling frame: bad sources named with the reason
# (never a hang on /dev/zero, never left out without a word); --strict stops
# at the first. Where a folder could be a source, any such entry is one (a
# dangling notes.txt might have been a folder of that name); where only some
# file names are (frames: .jpg), the others stay ignored.
mkdir -p "$tmp/links"
cp "$videos/100/100.mp4" "$tmp/links/good.mp4"
ln -s /dev/zero "$tmp/links/zero.mp4"
ln -s "$tmp/links/nowhere.mp4" "$tmp/links/dangling.mp4"
ln -s loop.mp4 "$tmp/links/loop.mp4"
ln -s nowhere "$tmp/links/folder"
ln -s nowhere.txt "$tmp/links/notes.txt"
check link_videos_skipped 0 timeout 120 "$gulpdb" ingest "$tmp/links_ds" --videos-dir "$tmp/links" \
  --quiet
expect_text link_zero_reported "skipping 'zero': read $tmp/links/zero.mp4: a symbolic link to /dev/zero, a character device"
expect_text link_dangling_reported "skipping 'dangling': read $tmp/links/dangling.mp4: a dangling symbolic link (to $tmp/links/nowhere.mp4)"
expect_text link_loop_reported "skipping 'loop': read $tmp/links/loop.mp4: a symbolic link loop (loop.mp4)"
expect_text link_folder_reported "skipping 'folder': find video folder in $tmp/links/folder: a dangling symbolic link (to nowhere)"
expect_text link_maybe_folder_reported "skipping 'notes.txt': find video notes.txt in $tmp/links/notes.txt: a dangling symbolic link (to nowhere.txt)"
expect_out link_videos_summary "ingested 1 videos .* 5 bad sources skipped"
check link_videos_strict 1 timeout 120 "$gulpdb" ingest "$tmp/links_strict" --videos-dir "$tmp/links" \
  --strict --quiet
expect_text link_videos_strict_message "gulpdb: not found: ingest 'dangling': read $tmp/links/dangling.mp4: a dangling symbolic link"
check link_videos_strict_nothing_created 1 test -e "$tmp/links_strict"
printf '[{"id": "zero", "label": "x"}, {"id": "good", "label": "y"}]' >"$tmp/links.json"
check link_videos_listed 0 timeout 120 "$gulpdb" ingest "$tmp/links_listed" --videos-dir "$tmp/links" \
  --labels "$tmp/links.json" --quiet
expect_text link_videos_listed_reported "skipping 'zero': read $tmp/links/zero.mp4: a symbolic link to /dev/zero"
mkdir -p "$tmp/linkf/clip" "$tmp/linkf/ok"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/linkf/clip/0000.jpg"
ln -s nowhere.jpg "$tmp/linkf/clip/0001.jpg"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/linkf/ok/"
ln -s /dev/zero "$tmp/linkf/zero"
mkfifo "$tmp/linkf/ok/0001.jpg"
mkdir -p "$tmp/linkf/good"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/linkf/good/"
ln -s nowhere.txt "$tmp/linkf/good/notes.txt"
for mode in "" --keep-jpeg; do
  check "link_frames_skipped$mode" 0 timeout 120 "$gulpdb" ingest "$tmp/linkf_ds$mode" \
    --frames-dir "$tmp/linkf" $mode --quiet
  expect_text "link_frame_reported$mode" "skipping 'clip': read $tmp/linkf/clip/0001.jpg: a dangling symbolic link (to nowhere.jpg)"
  expect_text "link_frame_folder_reported$mode" "skipping 'zero': read $tmp/linkf/zero: a symbolic link to /dev/zero, a character device"
  expect_text "fifo_frame_reported$mode" "skipping 'ok': read $tmp/linkf/ok/0001.jpg: a FIFO"
  expect_out "link_frames_summary$mode" "ingested 1 videos .* 3 bad sources skipped"
done
mkdir -p "$tmp/linki/cat"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/linki/cat/a.jpg"
ln -s /dev/zero "$tmp/linki/cat/b.png"
ln -s nowhere "$tmp/linki/dog"
check link_images_skipped 0 timeout 120 "$gulpdb" ingest "$tmp/linki_ds" --images-dir "$tmp/linki" \
  --quiet
expect_text link_image_reported "skipping 'cat/b.png': read $tmp/linki/cat/b.png: a symbolic link to /dev/zero"
expect_text link_class_reported "skipping 'dog': read $tmp/linki/dog: a dangling symbolic link (to nowhere)"
expect_out link_images_summary "ingested 1 videos .* 2 bad sources skipped"
check link_images_label2idx 0 grep -qx '{"cat": 0}' "$tmp/linki_ds/label2idx.json"
# A link back up an image tree is not followed (it would list the same images
# again under ids 40 levels deep), with a warning.
ln -s .. "$tmp/linki/cat/up"
check link_cycle_not_followed 0 timeout 120 "$gulpdb" ingest "$tmp/linki_cycle" \
  --images-dir "$tmp/linki" --quiet
expect_text link_cycle_warning "warning: images folder $tmp/linki/cat/up leads back to a folder above it"
expect_out link_cycle_summary "ingested 1 videos .* 2 bad sources skipped"
printf '/dev/zero;x\n' >"$tmp/zero_list.txt"
check image_list_dev_zero 1 timeout 120 "$gulpdb" ingest "$tmp/zero_list_ds" \
  --image-list "$tmp/zero_list.txt" --strict --quiet
expect_text image_list_dev_zero_message "gulpdb: invalid argument: ingest '/dev/zero': read /dev/zero: a character device"
# A video shorter than one frame period at --frame-rate (one frame at the
# default 8 fps, which ffmpeg's fps filter drops) keeps its frame.
mkdir -p "$tmp/short"
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=64x48:rate=25 -frames:v 1 "$tmp/short/one.mp4"
check one_frame_video 0 "$gulpdb" ingest "$tmp/short_ds" --videos-dir "$tmp/short" --strict --quiet
expect_out one_frame_video_summary "ingested 1 videos \(1 frames\)"
capture one_frame_video_listed "$tmp/short_listed" "$gulpdb" ls "$tmp/short_ds"
expect_eq one_frame_video_frames "$(stored_frames "$tmp/short_listed" one)" 1
printf '0;a\n0;b\n1;a\n' >"$tmp/twice.csv"
check listed_twice_skipped 0 "$gulpdb" ingest "$tmp/twice_ds" --frames-dir "$fixtures/frames_src" \
  --labels "$tmp/twice.csv" --quiet
expect_out listed_twice_summary "ingested 2 videos .* 1 listed twice"
check listed_twice_first_wins 0 "$gulpdb" show "$tmp/twice_ds" 0
expect_out listed_twice_first_label '"label": "a"'
check listed_twice_error 1 "$gulpdb" ingest "$tmp/twice_err" --frames-dir "$fixtures/frames_src" \
  --labels "$tmp/twice.csv" --on-duplicate error --quiet
check listed_twice_error_nothing_created 1 test -e "$tmp/twice_err"
check bad_frames_strict 1 "$gulpdb" ingest "$tmp/badf_strict" --frames-dir "$tmp/badf" --strict --quiet
printf '[{"id": 1},' >"$tmp/bad_list.json"
check bad_list 1 "$gulpdb" ingest "$tmp/badlist_ds" --videos-dir "$videos" --labels "$tmp/bad_list.json" --quiet
expect_out bad_list_message "bad_list.json: line 1, column 12: the JSON text ends early"

# ---- label lists are told apart by content, and read the way they are meant ------
# A JSON object is not a list: an error, not a CSV of one odd id.
printf '\n  {"100": "pattern"}\n' >"$tmp/object.json"
check list_object_refused 1 "$gulpdb" ingest "$tmp/obj_ds" --videos-dir "$videos" \
  --labels "$tmp/object.json" --quiet
expect_out list_object_message "object.json: line 2, column 3: .*list of objects.*not an object"
check list_object_nothing_created 1 test -e "$tmp/obj_ds"
# something-something's label key is "template": without --label-name no
# video would get a label.
check list_wrong_key_refused 1 "$gulpdb" ingest "$tmp/key_ds" --videos-dir "$videos" \
  --labels "$videos/videos.json" --quiet
expect_out list_wrong_key_message 'no entry has the label key "label" \(the entries have "template".*--label-name'
check list_wrong_key_nothing_created 1 test -e "$tmp/key_ds"
# Some entries without the label: ingested unlabeled, with one warning (even
# with --quiet) giving their count and a few ids.
printf '[{"id": "100", "label": "a"}, {"id": "101"}, {"id": 102, "note": 1}]' >"$tmp/partial.json"
check list_partial 0 "$gulpdb" ingest "$tmp/partial_ds" --videos-dir "$videos" \
  --labels "$tmp/partial.json" --quiet
expect_out list_partial_warning 'warning: .*partial.json: 2 of 3 entries have no "label" and are ingested unlabeled: ids "101", 102'
check list_partial_unlabeled 0 "$gulpdb" show "$tmp/partial_ds" 101 --json
expect_out list_partial_unlabeled_meta '"meta_data": \[\{"id": "101"\}\]'
# A list of ids alone (a test split) names unlabeled videos; nothing to warn about.
printf '[{"id": "100"}, {"id": 101}]' >"$tmp/ids.json"
check list_ids_only 0 "$gulpdb" ingest "$tmp/ids_ds" --videos-dir "$videos" --labels "$tmp/ids.json" \
  --quiet
expect_no_out list_ids_only_silent "warning"
expect_out list_ids_only_summary "ingested 2 videos"
# JSON after a byte order mark and blank lines; a CSV's byte order mark is not part of its first id.
printf '\xef\xbb\xbf\n\t [{"id": "100", "label": "x"}]' >"$tmp/bom.json"
check list_json_bom 0 "$gulpdb" ingest "$tmp/bom_ds" --videos-dir "$videos" --labels "$tmp/bom.json" --quiet
check list_json_bom_labeled 0 "$gulpdb" show "$tmp/bom_ds" 100
expect_out list_json_bom_label '"label": "x"'
printf '\xef\xbb\xbf0;circle\r\n' >"$tmp/bom.csv"
check list_csv_bom 0 "$gulpdb" ingest "$tmp/bom_csv_ds" --frames-dir "$fixtures/frames_src" \
  --labels "$tmp/bom.csv" --quiet
expect_out list_csv_bom_summary "ingested 1 videos .* 0 bad sources"
check list_csv_bom_id 0 "$gulpdb" show "$tmp/bom_csv_ds" 0
# A JSON syntax error names the line and the column.
printf '[\n  {"id": "100", "label": "x"},\n  {"id": "101" "label": "y"}\n]\n' >"$tmp/syntax.json"
check list_syntax_error 1 "$gulpdb" ingest "$tmp/syntax_ds" --videos-dir "$videos" \
  --labels "$tmp/syntax.json" --quiet
expect_out list_syntax_error_where "syntax.json: line 3, column 16: "
check list_syntax_nothing_created 1 test -e "$tmp/syntax_ds"
# An empty list names nothing: an error, not an empty dataset.
printf '[ ]' >"$tmp/empty.json"
printf '\n\n' >"$tmp/empty.csv"
for f in empty.json empty.csv; do
  check "list_$f" 1 "$gulpdb" ingest "$tmp/empty_ds" --frames-dir "$fixtures/frames_src" \
    --labels "$tmp/$f" --quiet
  expect_out "list_${f}_message" "$f: .*names no videos"
  check "list_${f}_nothing_created" 1 test -e "$tmp/empty_ds"
done
# A CSV separated by ',' is read as ids with commas in them, and said so.
printf '0,circle\n1,square\n' >"$tmp/comma.csv"
check list_comma_csv 0 "$gulpdb" ingest "$tmp/comma_ds" --frames-dir "$fixtures/frames_src" \
  --labels "$tmp/comma.csv" --quiet
expect_out list_comma_csv_warning "warning: .*comma.csv: no line has a ';' but every line has a ','"

# ---- a missing source is "not found", an unreadable one an I/O error ------------
printf 'nowhere.png;x\n' >"$tmp/missing_images.txt"
check strict_missing_image 1 "$gulpdb" ingest "$tmp/strict_missing" --image-list "$tmp/missing_images.txt" \
  --strict --quiet
expect_out strict_missing_image_kind "gulpdb: not found: ingest 'nowhere.png': read .*nowhere.png: No such file"
check strict_missing_nothing_created 1 test -e "$tmp/strict_missing"
mkdir -p "$tmp/unreadable"
cp "$videos/100/100.mp4" "$tmp/unreadable/secret.mp4"
chmod 000 "$tmp/unreadable/secret.mp4"
chmod 777 "$tmp/unreadable"
check strict_unreadable_video 1 as_user "$gulpdb" ingest "$tmp/unreadable/ds" \
  --videos-dir "$tmp/unreadable" --strict --quiet
expect_out strict_unreadable_video_kind "gulpdb: i/o error: ingest 'secret': read .*secret.mp4: Permission denied"
check strict_unreadable_nothing_created 1 test -e "$tmp/unreadable/ds"

check bad_list_nothing_created 1 test -e "$tmp/badlist_ds"
check no_source 2 "$gulpdb" ingest "$tmp/nosrc"
check two_sources 2 "$gulpdb" ingest "$tmp/nosrc" --frames-dir "$tmp/badf" --videos-dir "$videos"
check no_ffmpeg 1 env PATH=/nonexistent "$gulpdb" ingest "$tmp/noff" --videos-dir "$videos" --quiet
expect_out no_ffmpeg_message "run ffmpeg: No such file"

# ---- an ingest killed midway, then re-run -------------------------------------------
# 300 frame folders of 12 frames each (hard links to 12 generated JPEGs).
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=192x144:rate=25 -frames:v 12 -q:v 3 \
  "$tmp/gen_%02d.jpg"
mkdir "$tmp/many"
for i in $(seq -w 1 300); do
  mkdir "$tmp/many/v$i"
  ln "$tmp"/gen_*.jpg "$tmp/many/v$i/"
done
kill_ds=$tmp/killed
"$gulpdb" ingest "$kill_ds" --frames-dir "$tmp/many" --batch 10 --num-workers 1 --quiet \
  >/dev/null 2>&1 &
pid=$!
committed=0
for _ in $(seq 1 500); do
  committed=$("$gulpdb" info "$kill_ds" --json 2>/dev/null | sed -n 's/.*"videos": \([0-9]*\).*/\1/p')
  [ "${committed:-0}" -ge 20 ] && break
  sleep 0.01
done
{ kill -KILL $pid && wait $pid; } 2>/dev/null
committed=$("$gulpdb" info "$kill_ds" --json | sed -n 's/.*"videos": \([0-9]*\).*/\1/p')
echo "killed the ingest with ${committed:-?} of 300 videos committed"
check killed_midway 0 test "${committed:-0}" -ge 10 -a "${committed:-0}" -lt 300
check killed_batches_whole 0 test $((${committed:-1} % 10)) -eq 0
check killed_healthy 0 "$gulpdb" check "$kill_ds" --quiet
check killed_rerun 0 "$gulpdb" ingest "$kill_ds" --frames-dir "$tmp/many" --batch 10 --quiet
expect_out killed_rerun_summary "ingested $((300 - ${committed:-0})) videos .* ${committed:-0} already present"
capture killed_rerun_listed "$tmp/killed_listed" "$gulpdb" ls "$kill_ds"
cut -f1 "$tmp/killed_listed" >"$tmp/ids"
expect_eq killed_rerun_count "$(wc -l <"$tmp/ids")" 300
expect_eq killed_rerun_unique "$(sort -u "$tmp/ids" | wc -l)" 300
check killed_rerun_deep 0 "$gulpdb" check "$kill_ds" --deep --quiet

# SIGINT (Ctrl-C) stops the workers and their ffmpeg children, commits what
# was appended and exits 130; a re-run completes.
mkdir -p "$tmp/sigv"
for i in $(seq -w 1 40); do ln "$videos/101/101.mp4" "$tmp/sigv/v$i.mp4"; done
"$gulpdb" ingest "$tmp/sig_ds" --videos-dir "$tmp/sigv" --batch 4 --quiet >"$tmp/sig_out" 2>&1 &
pid=$!
for _ in $(seq 1 500); do
  n=$("$gulpdb" info "$tmp/sig_ds" --json 2>/dev/null | sed -n 's/.*"videos": \([0-9]*\).*/\1/p')
  [ "${n:-0}" -ge 4 ] && break
  sleep 0.01
done
kill -INT $pid
wait $pid
expect_eq sigint_exit $? 130
check sigint_reported 0 grep -q "interrupted by signal 2" "$tmp/sig_out"
check sigint_no_children_left 1 pgrep -f "$tmp/sigv"
check sigint_healthy 0 "$gulpdb" check "$tmp/sig_ds" --quiet
check sigint_rerun 0 "$gulpdb" ingest "$tmp/sig_ds" --videos-dir "$tmp/sigv" --quiet
capture sigint_rerun_listed "$tmp/sig_listed" "$gulpdb" ls "$tmp/sig_ds"
expect_eq sigint_rerun_count "$(wc -l <"$tmp/sig_listed")" 40

finish
