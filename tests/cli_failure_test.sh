#!/usr/bin/env bash
# The gulpdb command under hostile use: a failed command leaves nothing behind
# (exactly what the run created is removed, never what was there before)
# unless a transaction committed into it (then it keeps that, says so and how
# to resume, and the same command resumes), and
# every bad input (a missing path, a file where a directory is expected and
# the reverse, empty strings, bytes that are not UTF-8, read-only places, a
# file size limit) gets a clear one-line error, never a crash.
#   cli_failure_test.sh GULPDB_BINARY FIXTURES_DIR
set -uo pipefail
gulpdb=$1
fixtures=$2
source "$(dirname "$0")/cli_lib.sh"
frames=$fixtures/frames_src
ds=$tmp/ds
"$gulpdb" ingest "$ds" --frames-dir "$frames" --keep-jpeg --quiet >/dev/null
touch "$tmp/afile"
# Everything below a directory, with sizes, to compare before and after.
snapshot() { (cd "$1" && find . -printf '%p %s\n' | sort); }

# ---- failed commands leave nothing behind --------------------------------------------
# A shard that does not exist: no output dataset appears.
check merge_missing_shard 1 "$gulpdb" merge "$tmp/merged" "$tmp/no_shard" --quiet
expect_out merge_missing_shard_message "no_shard"
check merge_missing_shard_no_out 1 test -e "$tmp/merged"
# Into an existing folder that is not a dataset: its own files stay, nothing is added.
mkdir "$tmp/keep" && printf 'mine' >"$tmp/keep/notes.txt"
check merge_into_folder_fails 1 "$gulpdb" merge "$tmp/keep" "$ds" "$ds" --quiet
expect_eq merge_into_folder_untouched "$(ls -A "$tmp/keep")" notes.txt
check merge_into_folder_file_kept 0 grep -qx mine "$tmp/keep/notes.txt"
# A failure after the dataset was made (its index cannot be created): no directory.
check create_index_fails 1 "$gulpdb" create "$tmp/c" --index-dir "$tmp/no_parent/index"
check create_index_fails_no_dir 1 test -e "$tmp/c"
# A strict ingest that stops at a bad source before anything was committed
# (the bad source comes first): the new dataset goes, whole.
mkdir -p "$tmp/bad_src/a" "$tmp/bad_src/b"
printf 'not a jpeg' >"$tmp/bad_src/a/0000.jpg"
cp "$frames/0/0000.jpg" "$tmp/bad_src/b/"
check strict_ingest_fails 1 "$gulpdb" ingest "$tmp/new" --frames-dir "$tmp/bad_src" --strict \
  --batch 1 --quiet
check strict_ingest_no_dataset 1 test -e "$tmp/new"
check strict_ingest_into_folder 1 "$gulpdb" ingest "$tmp/keep" --frames-dir "$tmp/bad_src" \
  --strict --batch 1 --quiet
expect_eq strict_ingest_folder_untouched "$(ls -A "$tmp/keep")" notes.txt
check strict_ingest_index_dir 1 "$gulpdb" ingest "$tmp/new" --index-dir "$tmp/new_index" \
  --frames-dir "$tmp/bad_src" --strict --batch 1 --quiet
check strict_ingest_index_dir_gone 1 test -e "$tmp/new_index" -o -e "$tmp/new"
# ... but an existing dataset is never removed: its committed batches stay.
before=$(snapshot "$ds")
check strict_ingest_existing 1 "$gulpdb" ingest "$ds" --frames-dir "$tmp/bad_src" --strict --quiet
check strict_ingest_existing_kept 0 "$gulpdb" check "$ds" --quiet
# An index in a folder that already holds other files: only the index files go.
mkdir "$tmp/shared_idx" && printf 'x' >"$tmp/shared_idx/other"
check strict_ingest_shared_index_dir 1 "$gulpdb" ingest "$tmp/new2" --index-dir "$tmp/shared_idx" \
  --frames-dir "$tmp/bad_src" --strict --batch 1 --quiet
expect_eq strict_ingest_shared_index_dir_left "$(ls -A "$tmp/shared_idx")" other

# ---- ... unless a transaction committed into it ---------------------------------------
# A strict ingest into a new dataset that fails at its last source after
# committing the others (--batch 1) keeps them, says so and how to resume; the
# same command, once the source is fixed, resumes: every video exactly once.
mkdir -p "$tmp/late_bad"
for v in a b c; do mkdir "$tmp/late_bad/$v" && cp "$frames/0/0000.jpg" "$tmp/late_bad/$v/"; done
mkdir "$tmp/late_bad/d" && printf 'not a jpeg' >"$tmp/late_bad/d/0000.jpg"
late_ingest=("$gulpdb" ingest "$tmp/kept" --frames-dir "$tmp/late_bad" --keep-jpeg --strict --batch 1
  --quiet)
check late_failure_fails 1 "${late_ingest[@]}"
expect_out late_failure_names_source "gulpdb: corruption: ingest 'd': "
expect_text late_failure_says_kept "; kept $tmp/kept: 3 videos committed before the failure; re-run the same command to resume: ids already present are skipped"
expect_eq late_failure_one_line "$(wc -l <"$tmp/err")" 1
capture late_failure_listed "$tmp/kept_ls" "$gulpdb" ls "$tmp/kept"
expect_eq late_failure_kept_videos "$(cut -f1 "$tmp/kept_ls" | sort | tr '\n' ' ')" "a b c "
check late_failure_kept_healthy 0 "$gulpdb" check "$tmp/kept" --quiet
cp "$frames/0/0000.jpg" "$tmp/late_bad/d/0000.jpg"
check late_failure_resumed 0 "${late_ingest[@]}"
expect_out late_failure_resumed_summary "ingested 1 videos .* 3 already present, 0 bad"
capture late_failure_resumed_listed "$tmp/kept_ls" "$gulpdb" ls "$tmp/kept"
expect_eq late_failure_every_video_once "$(cut -f1 "$tmp/kept_ls" | sort | tr '\n' ' ')" "a b c d "
check late_failure_resumed_healthy 0 "$gulpdb" check "$tmp/kept" --deep --quiet
# With --index-dir, both directories stay; under --on-duplicate error the hint
# says how to resume (the same command would stop at the first present id).
printf 'not a jpeg' >"$tmp/late_bad/d/0000.jpg"
check late_failure_index_dir 1 "$gulpdb" ingest "$tmp/kept2" --index-dir "$tmp/kept2_index" \
  --frames-dir "$tmp/late_bad" --strict --batch 1 --on-duplicate error --quiet
expect_text late_failure_index_dir_hint "kept $tmp/kept2: 3 videos committed before the failure; re-run it with --on-duplicate skip to resume (not error)"
check late_failure_index_dir_kept 0 "$gulpdb" info "$tmp/kept2" --index-dir "$tmp/kept2_index"
expect_out late_failure_index_dir_count "videos: +3"
# A merge into a new OUT that fails at its second shard (a file size limit:
# the shard is copied, not attached) keeps the first shard's committed videos;
# re-run as the note says, it merges the rest.
mkdir -p "$tmp/small_src/s" && cp "$frames/0/0000.jpg" "$tmp/small_src/s/"
"$gulpdb" ingest "$tmp/shard_small" --frames-dir "$tmp/small_src" --keep-jpeg --quiet >/dev/null
mkdir -p "$tmp/big_shard_src/v"
ffmpeg -nostdin -v error -f lavfi -i "nullsrc=s=640x480,geq=random(1)*255:128:128" \
  -frames:v 12 -q:v 1 "$tmp/big_shard_src/v/%04d.jpg"  # noise: ~2.7 MB of JPEG
"$gulpdb" ingest "$tmp/shard_big" --frames-dir "$tmp/big_shard_src" --keep-jpeg --quiet >/dev/null
merge_limited() { (trap '' XFSZ && ulimit -f 1500 && "$gulpdb" "$@"); }
# A full disk (here a file size limit) part way through an ingest into a new
# dataset keeps the batches committed before it; the same command resumes.
mkdir -p "$tmp/disk_src"
cp -r "$tmp/small_src/s" "$tmp/disk_src/a" && cp -r "$tmp/small_src/s" "$tmp/disk_src/b"
cp -r "$tmp/big_shard_src/v" "$tmp/disk_src/v"
check full_disk_late_failure 1 merge_limited ingest "$tmp/disk_kept" --frames-dir "$tmp/disk_src" \
  --keep-jpeg --batch 1 --quiet
expect_out full_disk_late_failure_message "File too large"
expect_text full_disk_late_failure_kept "kept $tmp/disk_kept: 2 videos committed before the failure"
check full_disk_resumed 0 "$gulpdb" ingest "$tmp/disk_kept" --frames-dir "$tmp/disk_src" \
  --keep-jpeg --batch 1 --quiet
expect_out full_disk_resumed_summary "ingested 1 videos .* 2 already present"
check full_disk_resumed_healthy 0 "$gulpdb" check "$tmp/disk_kept" --deep --quiet
check merge_late_failure 1 merge_limited merge "$tmp/merged_kept" "$tmp/shard_small" \
  "$tmp/shard_big" --quiet
expect_out merge_late_failure_message "File too large"
expect_text merge_late_failure_kept "kept $tmp/merged_kept: 1 video committed before the failure; re-run it with --on-duplicate skip to resume (not error)"
capture merge_late_failure_listed "$tmp/merged_ls" "$gulpdb" ls "$tmp/merged_kept"
expect_eq merge_late_failure_kept_video "$(cut -f1 "$tmp/merged_ls")" "s"
check merge_late_failure_resumed 0 "$gulpdb" merge "$tmp/merged_kept" "$tmp/shard_small" \
  "$tmp/shard_big" --on-duplicate skip --quiet
capture merge_resumed_listed "$tmp/merged_ls" "$gulpdb" ls "$tmp/merged_kept"
expect_eq merge_resumed_every_video_once "$(cut -f1 "$tmp/merged_ls" | sort | tr '\n' ' ')" "s v "

# A failed import leaves no index, in place or at --index-dir.
cp -r "$fixtures/gulpio2_csv_jpeg" "$tmp/gio" && chmod -R u+w "$tmp/gio"
printf '{"broken": ' >"$tmp/gio/meta_3.gmeta"
check import_bad_gmeta 1 "$gulpdb" import "$tmp/gio" --index-dir "$tmp/gio_index" --quiet
check import_bad_gmeta_no_index 1 test -e "$tmp/gio_index"
check import_bad_gmeta_no_index_in_place 1 test -e "$tmp/gio/gulpdb.index"
# An index directory that holds files but no index (here a writer lock another
# process holds, on descriptor 9) is not taken over: the run fails, says so,
# and never removes what it did not make.
mkdir "$tmp/raced_index"
exec 9>"$tmp/raced_index/writer.lock"
flock -n 9
check raced_ingest_refused 1 "$gulpdb" ingest "$tmp/raced" --index-dir "$tmp/raced_index" \
  --frames-dir "$frames" --quiet
expect_out raced_ingest_kind "gulpdb: invalid argument: "
expect_out raced_ingest_says "raced_index holds files but no index .writer\.lock."
check raced_ingest_kept 0 test -f "$tmp/raced_index/writer.lock"
check raced_ingest_no_index 1 test -e "$tmp/raced_index/data.mdb"
exec 9>&-
# Writes that fail part way (a file size limit): what was written goes, with
# the folder when the run made it; the error names the file and errno text.
limited() { (trap '' XFSZ && ulimit -f 4 && "$@"); }
big=$tmp/big_src
mkdir -p "$big/v"
ffmpeg -nostdin -v error -f lavfi -i testsrc=size=320x240 -frames:v 3 -q:v 2 "$big/v/%04d.jpg"
"$gulpdb" ingest "$tmp/big" --frames-dir "$big" --keep-jpeg --quiet >/dev/null
check extract_file_too_large 1 limited "$gulpdb" extract "$tmp/big" v -o "$tmp/big_out"
expect_out extract_file_too_large_message "gulpdb: i/o error: write .*big_out/v_0000[0-9].jpg: File too large"
check extract_file_too_large_no_out 1 test -e "$tmp/big_out"
mkdir "$tmp/big_out2" && printf 'mine' >"$tmp/big_out2/v_00002.jpg"
check extract_partial_existing_out 1 limited "$gulpdb" extract "$tmp/big" v -o "$tmp/big_out2" \
  --frames 0,1
expect_eq extract_partial_existing_out_left "$(ls "$tmp/big_out2")" v_00002.jpg
check export_cannot_write 1 bash -c "ulimit -f 1 && trap '' XFSZ && '$gulpdb' export '$ds' -o '$tmp/exp_out'"
expect_out export_cannot_write_message "File too large"
check export_cannot_write_no_out 1 test -e "$tmp/exp_out"
mkdir "$tmp/exp_out2" && printf 'mine' >"$tmp/exp_out2/notes.txt"
check export_cannot_write_existing 1 bash -c "ulimit -f 1 && trap '' XFSZ && '$gulpdb' export '$ds' -o '$tmp/exp_out2'"
expect_eq export_cannot_write_existing_left "$(ls -A "$tmp/exp_out2")" notes.txt
mkdir "$tmp/big_real" && ln -s "$tmp/big_real" "$tmp/big_link"
check extract_through_link_fails 1 limited "$gulpdb" extract "$tmp/big" v -o "$tmp/big_link"
check extract_through_link_kept 0 test -L "$tmp/big_link"
expect_eq extract_through_link_nothing_left "$(ls -A "$tmp/big_real")" ""
check ingest_file_too_large 1 limited "$gulpdb" ingest "$tmp/big2" --frames-dir "$big" \
  --keep-jpeg --quiet
expect_out ingest_file_too_large_message "File too large"
check ingest_file_too_large_no_dataset 1 test -e "$tmp/big2"

# ---- clear errors -----------------------------------------------------------------------
# Output that cannot be written is an error, not a silent success.
check ls_to_full_disk 1 sh -c "'$gulpdb' ls '$ds' >/dev/full"
expect_out ls_to_full_disk_message "gulpdb ls: write the output: No space left on device"
check info_to_full_disk 1 sh -c "'$gulpdb' info '$ds' --json >/dev/full"
# A file where a directory is expected.
for cmd in info ls check compact export remove show extract import view; do
  args=("$tmp/afile")
  case $cmd in
    remove | show) args+=(0) ;; extract) args+=(0 -o "$tmp/x") ;; view) args+=(--no-browser) ;;
  esac
  check "${cmd}_file_as_dir" 1 "$gulpdb" "$cmd" "${args[@]}"
  expect_out "${cmd}_file_as_dir_message" "afile: not a directory"
done
check create_file_as_dir 1 "$gulpdb" create "$tmp/afile"
expect_out create_file_as_dir_message "afile: not a directory"
check ingest_file_as_dir 1 "$gulpdb" ingest "$tmp/afile" --frames-dir "$frames" --quiet
expect_out ingest_file_as_dir_message "afile: not a directory"
check merge_file_as_out 1 "$gulpdb" merge "$tmp/afile" "$ds" --quiet
expect_out merge_file_as_out_message "afile: not a directory"
check merge_file_as_shard 1 "$gulpdb" merge "$tmp/m" "$tmp/afile" --quiet
expect_out merge_file_as_shard_message "afile: not a directory"
check merge_file_as_shard_no_out 1 test -e "$tmp/m"
check file_in_path 1 "$gulpdb" info "$tmp/afile/sub"
expect_out file_in_path_message "not a directory"
check extract_out_is_file 1 "$gulpdb" extract "$ds" 0 -o "$tmp/afile"
expect_out extract_out_is_file_message "afile: not a directory"
check extract_out_under_file 1 "$gulpdb" extract "$ds" 0 -o "$tmp/afile/out"
expect_out extract_out_under_file_message "afile/out: Not a directory"
check export_out_is_file 1 "$gulpdb" export "$ds" -o "$tmp/afile"
expect_out export_out_is_file_message "afile: not a directory"
check index_dir_is_file 1 "$gulpdb" info "$ds" --index-dir "$tmp/afile"
expect_out index_dir_is_file_message "afile: not a directory"
# A directory where a file is expected.
check labels_is_dir 1 "$gulpdb" ingest "$tmp/n" --frames-dir "$frames" --labels "$frames" --quiet
expect_out labels_is_dir_message "frames_src: not a regular file"
check image_list_is_dir 1 "$gulpdb" ingest "$tmp/n" --image-list "$frames" --quiet
expect_out image_list_is_dir_message "frames_src: not a regular file"
check dirs_nothing_created 1 test -e "$tmp/n"
# Missing paths.
for cmd in info ls check compact export remove show extract import view; do
  args=("$tmp/nowhere")
  case $cmd in
    remove | show) args+=(0) ;; extract) args+=(0 -o "$tmp/x") ;; view) args+=(--no-browser) ;;
  esac
  check "${cmd}_missing" 1 "$gulpdb" "$cmd" "${args[@]}"
  expect_out "${cmd}_missing_message" "gulpdb: not found: .*nowhere"
done
check missing_frames_dir 1 "$gulpdb" ingest "$tmp/n" --frames-dir "$tmp/nowhere" --quiet
expect_out missing_frames_dir_message "not found: .*nowhere: No such file"
check missing_labels 1 "$gulpdb" ingest "$tmp/n" --frames-dir "$frames" --labels "$tmp/nowhere.csv"
expect_out missing_labels_message "not found: .*nowhere.csv: No such file"
check missing_nothing_created 1 test -e "$tmp/n"
# Empty strings are usage errors, never "not given".
check empty_dir 2 "$gulpdb" info ""
expect_out empty_dir_message "DIR is an empty string"
check empty_out 2 "$gulpdb" merge "" "$ds"
expect_out empty_out_message "OUT is an empty string"
check empty_shard 2 "$gulpdb" merge "$tmp/m" ""
for opt in videos-dir frames-dir images-dir image-list labels; do
  source_opt=(--frames-dir "$frames")
  [ "$opt" = frames-dir ] && source_opt=(--videos-dir "$frames")
  check "empty_$opt" 2 "$gulpdb" ingest "$tmp/n" "${source_opt[@]}" "--$opt" ""
  expect_out "empty_${opt}_message" "--$opt is an empty string"
done
check empty_output 2 "$gulpdb" extract "$ds" 0 -o ""
check empty_frames 2 "$gulpdb" extract "$ds" 0 -o "$tmp/x" --frames ""
check empty_export_output 2 "$gulpdb" export "$ds" -o ""
check empty_on_duplicate 2 "$gulpdb" ingest "$tmp/n" --frames-dir "$frames" --on-duplicate ""
check empty_label_name 2 "$gulpdb" ingest "$tmp/n" --frames-dir "$frames" --labels "$frames/labels.csv" \
  --label-name ""
check empties_nothing_created 1 test -e "$tmp/n" -o -e "$tmp/x"
# Bytes that are not UTF-8.
check non_utf8_id 1 "$gulpdb" show "$ds" $'a\xffb'
expect_text non_utf8_id_message "look up id 'a\\xffb' in "
check non_utf8_remove 1 "$gulpdb" remove "$ds" $'\xff'
expect_text non_utf8_remove_message "not in $ds: '\\xff'"
mkdir "$tmp/"$'bad\xffname'
check non_utf8_path 0 "$gulpdb" create "$tmp/"$'bad\xffname/ds'
check non_utf8_path_json 0 "$gulpdb" info "$tmp/"$'bad\xffname/ds' --json
expect_text non_utf8_path_json_text 'bad\udcffname/ds", "format_version"'
# A file or folder name in another encoding is a bad source, not a failed ingest.
mkdir -p "$tmp/latin1/"$'caf\xe9' "$tmp/latin1/ok"
cp "$frames/0/0000.jpg" "$tmp/latin1/"$'caf\xe9/'
cp "$frames/0/0000.jpg" "$tmp/latin1/ok/"
check non_utf8_folder 0 "$gulpdb" ingest "$tmp/latin1_ds" --frames-dir "$tmp/latin1" --quiet
expect_text non_utf8_folder_skipped "skipping 'caf\\xe9': the id ("
expect_out non_utf8_folder_reason "is not valid UTF-8"
expect_out non_utf8_folder_summary "ingested 1 videos .* 1 bad sources skipped"
check non_utf8_folder_strict 1 "$gulpdb" ingest "$tmp/latin1_strict" --frames-dir "$tmp/latin1" \
  --strict --quiet
expect_out non_utf8_folder_strict_message "invalid argument: ingest 'caf.*is not valid UTF-8"
check non_utf8_folder_strict_nothing_created 1 test -e "$tmp/latin1_strict"
mkdir -p "$tmp/latin1_tree/"$'chat\xe9' "$tmp/latin1_tree/dog"
cp "$frames/0/0000.jpg" "$tmp/latin1_tree/"$'chat\xe9/a.jpg'
cp "$frames/0/0000.jpg" "$tmp/latin1_tree/dog/b.jpg"
check non_utf8_class 0 "$gulpdb" ingest "$tmp/latin1_tree_ds" --images-dir "$tmp/latin1_tree" --quiet
expect_out non_utf8_class_summary "ingested 1 videos .* 1 bad sources skipped"
check non_utf8_class_label2idx 0 grep -qx '{"dog": 0}' "$tmp/latin1_tree_ds/label2idx.json"
# Control characters in an argument stay on one line in the error.
check newline_id 1 "$gulpdb" show "$ds" $'line1\nline2'
expect_eq newline_id_one_line "$(wc -l <"$tmp/err")" 1
# Read-only places, as a user without the rights (root has them all).
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
check readonly_create 1 as_user "$gulpdb" create "$tmp/ro/ds"
expect_out readonly_create_message "i/o error: create dataset .*ro/ds: Permission denied"
mkdir "$tmp/ro_out" && chmod 555 "$tmp/ro_out"
chmod -R a+rX "$ds"
check readonly_extract 1 as_user "$gulpdb" extract "$ds" 0 -o "$tmp/ro_out"
expect_out readonly_extract_message "write .*ro_out/0_00000.jpg: Permission denied"
check readonly_ingest 1 as_user "$gulpdb" ingest "$ds" --frames-dir "$frames" --quiet
expect_out readonly_ingest_message "gulpdb.index: Permission denied"
cp -r "$fixtures/gulpio2_csv_jpeg" "$tmp/ro_gio" && chmod -R a-w "$tmp/ro_gio"
check readonly_import 1 as_user "$gulpdb" import "$tmp/ro_gio" --quiet
expect_out readonly_import_hint "not writable: put the index elsewhere with --index-dir"
mkdir "$tmp/rw" && chmod 777 "$tmp/rw"
check readonly_import_index_dir 0 as_user "$gulpdb" import "$tmp/ro_gio" --index-dir "$tmp/rw/idx" \
  --quiet
check readonly_ls 0 as_user "$gulpdb" ls "$tmp/ro_gio" --index-dir "$tmp/rw/idx"
expect_eq readonly_ls_count "$(wc -l <"$tmp/out")" 22
# No input crashes the command (a crash exits 128+signal).
check no_crash_huge_frames 1 "$gulpdb" extract "$ds" 0 -o "$tmp/x" --frames 99999999999999999999999
expect_out no_crash_huge_frames_message "is out of range"
check no_crash_huge_slice 1 "$gulpdb" extract "$ds" 0 -o "$tmp/x" --frames 0:99999999999999999999999:2
expect_out no_crash_huge_slice_message "is out of range"
check no_crash_nothing_created 1 test -e "$tmp/x"

finish
