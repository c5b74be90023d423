#!/usr/bin/env bash
# End-to-end checks of the gulpdb command: every subcommand, and its error
# paths (exit status 1 for failures, 2 for usage errors).
#   cli_test.sh GULPDB_BINARY FIXTURES_DIR
set -uo pipefail
gulpdb=$1
fixtures=$2
source "$(dirname "$0")/cli_lib.sh"

ds=$tmp/ds
check ingest 0 "$gulpdb" ingest "$ds" --keep-jpeg --frames-dir "$fixtures/frames_src" \
  --labels "$fixtures/frames_src/labels.csv" --videos-per-chunk 4 --quiet
expect_out ingest_summary "ingested 22 videos \(67 frames\)"
check label2idx 0 grep -q '"circle": 0' "$ds/label2idx.json"
check reingest_skips 0 "$gulpdb" ingest "$ds" --frames-dir "$fixtures/frames_src" \
  --labels "$fixtures/frames_src/labels.csv" --quiet
expect_out reingest_summary "ingested 0 videos .* 22 already present"
check info 0 "$gulpdb" info "$ds"
expect_out info_videos "videos: +22"
check info_json 0 "$gulpdb" info "$ds" --json
expect_out info_json_frames '"frames": 67'
check ls 0 "$gulpdb" ls "$ds" --limit 2
check ls_count 0 test "$(wc -l <"$tmp/out")" -eq 2
check show 0 "$gulpdb" show "$ds" 3 --json
expect_out show_meta '"label": "square"'
check extract 0 "$gulpdb" extract "$ds" 0 -o "$tmp/frames" --frames 1,3
check extract_files 0 test -f "$tmp/frames/0_00001.jpg" -a -f "$tmp/frames/0_00003.jpg"
check extract_bytes 0 cmp "$tmp/frames/0_00001.jpg" "$fixtures/frames_src/0/0001.jpg"

# An id with path separators never writes outside the output directory.
mkdir -p "$tmp/evil_src/a" "$tmp/b"
cp "$fixtures/frames_src/0/0000.jpg" "$tmp/b/"
printf 'a/../../b;bad\n' >"$tmp/evil.csv"
check ingest_evil 0 "$gulpdb" ingest "$tmp/evil_ds" --frames-dir "$tmp/evil_src" --labels "$tmp/evil.csv" --quiet
check extract_evil 0 "$gulpdb" extract "$tmp/evil_ds" "a/../../b" -o "$tmp/evil_out"
check extract_evil_inside 0 test "$(ls "$tmp/evil_out" | wc -l)" -eq 1
check extract_evil_nothing_outside 1 test -e "$tmp/b_00000.jpg"

# Error paths.
check unknown_id 1 "$gulpdb" show "$ds" no_such_id
expect_out unknown_id_message "gulpdb: not found: .*no_such_id"
check missing_dataset 1 "$gulpdb" info "$tmp/nowhere"
expect_out missing_dataset_message "no such directory"
check bad_flag 2 "$gulpdb" info "$ds" --no-such-flag
check missing_arg 2 "$gulpdb" show "$ds"
check unknown_command 2 "$gulpdb" frobnicate
check bad_selection 1 "$gulpdb" extract "$ds" 0 -o "$tmp/f2" --frames 99
mkdir -p "$tmp/bad_src/broken" "$tmp/bad_src/empty"
printf 'not a jpeg' >"$tmp/bad_src/broken/0000.jpg"
check corrupt_source_skipped 0 "$gulpdb" ingest "$tmp/bad_ds" --frames-dir "$tmp/bad_src" --quiet
expect_out corrupt_source_reported "skipping .*broken"
check corrupt_source_strict 1 "$gulpdb" ingest "$tmp/bad_ds2" --frames-dir "$tmp/bad_src" --quiet --strict
check remove 0 "$gulpdb" remove "$ds" 0 1
check removed 1 "$gulpdb" show "$ds" 0
check remove_missing 1 "$gulpdb" remove "$ds" 0
# An empty id is absent like any other (LMDB cannot hold it; no MDB_BAD_VALSIZE).
check remove_empty_id 1 "$gulpdb" remove "$ds" ""
expect_out remove_empty_id_message "^removed 0 of 1 ids$"
check show_empty_id 1 "$gulpdb" show "$ds" ""
expect_out show_empty_id_message "gulpdb: not found: .*no such video"
check help 0 "$gulpdb" ingest --help

# GulpIO interop: import in place, check, export byte for byte.
gio=$tmp/gio
cp -r "$fixtures/gulpio2_csv_jpeg" "$gio"
chmod -R u+w "$gio"
# Writing into a plain GulpIO directory is refused (an empty index would hide
# its videos) and leaves it as it was; import still works afterwards.
ls -A "$gio" >"$tmp/gio_before"
check create_in_gulpio 1 "$gulpdb" create "$gio"
expect_out create_in_gulpio_message "holds GulpIO chunks.*gulpdb import $gio"
check ingest_in_gulpio 1 "$gulpdb" ingest "$gio" --frames-dir "$fixtures/frames_src" --quiet
expect_out ingest_in_gulpio_message "gulpdb import $gio"
check gulpio_unchanged 0 sh -c "ls -A '$gio' | cmp - '$tmp/gio_before'"
check import 0 "$gulpdb" import "$gio" --quiet
expect_out import_summary "11 chunks, 22 videos, 67 frames"
check import_again 1 "$gulpdb" import "$gio" --quiet
expect_out import_again_message "already indexed"
check import_missing 1 "$gulpdb" import "$tmp/nowhere"
check import_bad_policy 2 "$gulpdb" import "$gio" --on-duplicate sometimes
check check_healthy 0 "$gulpdb" check "$gio" --deep --quiet
expect_out check_healthy_message "healthy"
check export 0 "$gulpdb" export "$gio" -o "$tmp/gio_export"
check export_identical 0 cmp "$gio/meta_10.gmeta" "$tmp/gio_export/meta_10.gmeta"
check export_labels 0 cmp "$gio/label2idx.json" "$tmp/gio_export/label2idx.json"
# A directory changed by GulpIO tools after import: refused until re-indexed.
gio2=$tmp/gio2
cp -r "$fixtures/gulpio2_csv_jpeg" "$gio2" && chmod -R u+w "$gio2"
check import_gio2 0 "$gulpdb" import "$gio2" --quiet
sed 's/"square"/"SQUARE"/' "$gio2/meta_3.gmeta" >"$tmp/meta_3" && cat "$tmp/meta_3" >"$gio2/meta_3.gmeta"
touch -d '+2 seconds' "$gio2/meta_3.gmeta"
check stale_info 1 "$gulpdb" info "$gio2"
expect_out stale_info_message "changed since it was indexed.*meta_3.gmeta.*--reindex"
check stale_check 1 "$gulpdb" check "$gio2" --quiet
expect_out stale_check_message "meta_3.gmeta: changed since it was indexed"
check reindex 0 "$gulpdb" import "$gio2" --reindex --quiet
check reindexed_check 0 "$gulpdb" check "$gio2" --quiet
check reindexed_show 0 "$gulpdb" show "$gio2" 7 --json
expect_out reindexed_show_meta '"label": "SQUARE"'
check check_all_fixtures 0 sh -c "for d in '$fixtures'/gulpio*; do cp -r \"\$d\" '$tmp'/fx_\$(basename \"\$d\") && chmod -R u+w '$tmp'/fx_\$(basename \"\$d\") && '$gulpdb' import '$tmp'/fx_\$(basename \"\$d\") -q >/dev/null && '$gulpdb' check '$tmp'/fx_\$(basename \"\$d\") --deep -q >/dev/null || exit 1; done"
# A non-zero pad byte makes check fail: frame 0 of video "0" has pad 2 at offset 938.
printf 'x' | dd of="$gio/data_0.gulp" bs=1 seek=939 conv=notrunc status=none
check check_bad_pad 1 "$gulpdb" check "$gio" --quiet
expect_out check_bad_pad_message "pad byte"
check check_json 1 "$gulpdb" check "$gio" --json
expect_out check_json_message '"healthy": false'
truncate -s 100 "$gio/data_3.gulp"
check check_truncated 1 "$gulpdb" check "$gio" --quiet
expect_out check_truncated_message "data_3.gulp: truncated"

# compact and merge.
check compact 0 "$gulpdb" compact "$ds" --quiet
expect_out compact_summary "compacted 1 chunks"
check compact_check 0 "$gulpdb" check "$ds" --deep --quiet
check compact_info 0 "$gulpdb" info "$ds" --json
expect_out compact_no_garbage '"garbage_bytes": 0'
mkdir -p "$tmp/merged/shards"
check shard_a 0 "$gulpdb" ingest "$tmp/merged/shards/a" --frames-dir "$fixtures/frames_src" --labels "$fixtures/frames_src/labels.csv" --quiet
check merge 0 "$gulpdb" merge "$tmp/merged" "$tmp/merged/shards/a" "$tmp/evil_ds" --quiet
expect_out merge_summary "23 videos \(1 chunks attached in place, 1 videos copied"
check merge_dup 1 "$gulpdb" merge "$tmp/merged" "$tmp/evil_ds" --quiet
check merge_skip 0 "$gulpdb" merge "$tmp/merged" "$tmp/evil_ds" --on-duplicate skip --quiet
check merge_check 0 "$gulpdb" check "$tmp/merged" --deep --quiet
# One label map for the merged dataset, and every idx consistent with it.
check merge_labels 0 grep -qF '{"bad": 0, "circle": 1, "square": 2, "triangle": 3}' "$tmp/merged/label2idx.json"
check merge_idx 0 "$gulpdb" show "$tmp/merged" 3 --json
expect_out merge_idx_value '"label": "square", "idx": 2'
# Compacting the merged dataset keeps the attached shard whole, and the
# shard refuses writes of its own.
check merge_remove 0 "$gulpdb" remove "$tmp/merged" 0 1
check merge_compact 0 "$gulpdb" compact "$tmp/merged" --quiet
check merge_compact_check 0 "$gulpdb" check "$tmp/merged" --deep --quiet
check shard_after_compact 0 "$gulpdb" check "$tmp/merged/shards/a" --deep --quiet
check shard_refuses_writes 1 "$gulpdb" remove "$tmp/merged/shards/a" 5
expect_out shard_refuses_writes_message "attached to .*merged"
# A missing shard is found before anything is created.
check merge_missing_shard 1 "$gulpdb" merge "$tmp/merged2" "$tmp/evil_ds" "$tmp/nowhere" --quiet
check merge_missing_shard_nothing 1 test -e "$tmp/merged2"
check compact_missing 1 "$gulpdb" compact "$tmp/nowhere"

finish
