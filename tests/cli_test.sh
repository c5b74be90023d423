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

# Frame file names are injective: a safe id is kept, any other gets a hash of
# the id, so that ids that look alike once made safe never share a file.
names_src=$tmp/names_src
long_id=$(printf 'l%.0s' $(seq 1 250))
names=("a/b" "a_b" "é" "ü" ".hidden" "x-0123abcd" "$long_id" "sp ace")
: >"$tmp/names.csv"
for id in "${names[@]}"; do
  mkdir -p "$names_src/$id"
  cp "$fixtures/frames_src/3/0000.jpg" "$names_src/$id/0000.jpg"
  printf '%s;n\n' "$id" >>"$tmp/names.csv"
done
check names_ingest 0 "$gulpdb" ingest "$tmp/names_ds" --frames-dir "$names_src" \
  --labels "$tmp/names.csv" --keep-jpeg --quiet
for id in "${names[@]}"; do
  check "extract_name_${id:0:12}" 0 "$gulpdb" extract "$tmp/names_ds" "$id" -o "$tmp/names_out"
done
expect_eq extract_names_distinct "$(ls "$tmp/names_out" | wc -l)" "${#names[@]}"
for id in "${names[@]}"; do
  check "extract_name_rule_${id:0:12}" 0 cmp "$tmp/names_out/$(frame_stem "$id")_00000.jpg" \
    "$fixtures/frames_src/3/0000.jpg"
done
check extract_safe_id_kept 0 test -f "$tmp/names_out/a_b_00000.jpg"
check extract_hashed_form 0 test -f "$tmp/names_out/$(frame_stem a/b)_00000.jpg"
expect_eq extract_hashed_looks "$(frame_stem a/b | sed 's/-[0-9a-f]\{8\}$/-HASH/')" "a_b-HASH"
check extract_help_names_rule 0 "$gulpdb" extract --help
expect_out extract_help_names_rule_text "FNV-1a"
# An existing file is never overwritten without --force (nothing is written).
printf 'keep me' >"$tmp/names_out/a_b_00000.jpg"
check extract_refuses_overwrite 1 "$gulpdb" extract "$tmp/names_ds" a_b -o "$tmp/names_out"
expect_out extract_refuses_overwrite_message "a_b_00000.jpg' exists.*--force"
check extract_refused_left_alone 0 grep -qx 'keep me' "$tmp/names_out/a_b_00000.jpg"
check extract_force 0 "$gulpdb" extract "$tmp/names_ds" a_b -o "$tmp/names_out" --force
check extract_forced_bytes 0 cmp "$tmp/names_out/a_b_00000.jpg" "$fixtures/frames_src/3/0000.jpg"
# --force replaces a symbolic link; it never writes through it.
printf 'outside' >"$tmp/outside.jpg"
rm "$tmp/names_out/a_b_00000.jpg"
ln -s "$tmp/outside.jpg" "$tmp/names_out/a_b_00000.jpg"
check extract_force_symlink 0 "$gulpdb" extract "$tmp/names_ds" a_b -o "$tmp/names_out" --force
check extract_force_symlink_outside_untouched 0 grep -qx outside "$tmp/outside.jpg"
check extract_force_symlink_replaced 1 test -L "$tmp/names_out/a_b_00000.jpg"
# A frame named twice in the selection is written once.
check extract_repeated_frame 0 "$gulpdb" extract "$ds" 0 -o "$tmp/twice_out" --frames 1,1
expect_eq extract_repeated_frame_once "$(ls "$tmp/twice_out")" "0_00001.jpg"

# Plain `ls` prints ids as JSON string bodies: one line per video, whatever
# the id holds, and the same ids as `ls --json` (JSON Lines).
ctrl=$tmp/ctrl_gio
mkdir "$ctrl"
/usr/bin/python3 - "$ctrl" "$fixtures/frames_src/0/0000.jpg" <<'PY'
import json, sys
out, jpeg = sys.argv[1], open(sys.argv[2], "rb").read()
ids = ["a\u0000b", "new\nline", "tab\there", "back\\slash", 'quote"d', "del\u007f", "c1\u0085x",
       "\u00e9t\u00e9", "plain"]
pad = (4 - len(jpeg) % 4) % 4
meta, data = {}, b""
for i in ids:
    meta[i] = {"frame_info": [[len(data), pad, len(jpeg) + pad]], "meta_data": [{}]}
    data += jpeg + b"\0" * pad
open(out + "/data_0.gulp", "wb").write(data)
json.dump(meta, open(out + "/meta_0.gmeta", "w"))
json.dump(ids, open(out + "/ids.json", "w"))
PY
check ctrl_import 0 "$gulpdb" import "$ctrl" --quiet
"$gulpdb" ls "$ctrl" >"$tmp/ls_plain"
"$gulpdb" ls "$ctrl" --json >"$tmp/ls_json"
expect_eq ls_one_line_per_video "$(wc -l <"$tmp/ls_plain")" 9
check ls_plain_agrees_with_json 0 /usr/bin/python3 - "$tmp/ls_plain" "$tmp/ls_json" "$ctrl/ids.json" <<'PY'
import json, sys
plain = [json.loads('"' + line.rstrip("\n").split("\t")[0] + '"')
         for line in open(sys.argv[1], encoding="utf-8")]
lines = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
assert plain == [o["id"] for o in lines], (plain, lines)
assert sorted(plain) == sorted(json.load(open(sys.argv[3]))), plain
PY
check ls_escapes_newline 0 grep -qxF 'new\nline	1' "$tmp/ls_plain"
check ls_escapes_nul 0 grep -qxF 'a\u0000b	1' "$tmp/ls_plain"
check ls_escapes_backslash 0 grep -qxF 'back\\slash	1' "$tmp/ls_plain"
check ls_keeps_unicode 0 grep -qxF 'été	1' "$tmp/ls_plain"
check show_control_id 0 "$gulpdb" show "$ctrl" $'tab\there'
expect_out show_control_id_escaped '^id: +tab\\there$'
check ls_help 0 "$gulpdb" ls --help
expect_out ls_help_json_lines "JSON Lines"

# `remove` names the ids it did not find.
check remove_names_missing 1 "$gulpdb" remove "$ds" 2 m1 m2 m3 m4 m5 m6 m7
expect_out remove_names_missing_count "removed 1 of 8 ids"
expect_out remove_names_missing_ids "not in .*'m1', 'm2', 'm3', 'm4', 'm5' and 2 more"
check remove_repeated_id 0 "$gulpdb" remove "$ds" 4 4
expect_out remove_repeated_id_count "removed 1 of 1 ids"
# An empty id is an id that is not there.
check show_empty_id 1 "$gulpdb" show "$ds" ""
expect_out show_empty_id_message "not found: .*no such video"
check extract_empty_id 1 "$gulpdb" extract "$ds" "" -o "$tmp/empty_id_out"
expect_out extract_empty_id_message "not found: .*no such video"
check extract_empty_id_nothing_created 1 test -e "$tmp/empty_id_out"
check remove_empty_id 1 "$gulpdb" remove "$ds" ""
expect_out remove_empty_id_message "not in .*''"
check show_long_id 1 "$gulpdb" show "$ds" "$(printf 'x%.0s' $(seq 1 600))"
expect_out show_long_id_message "not found: .*no such video"

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
expect_out import_bad_policy_message "must be error, skip or replace, not 'sometimes'"
# One duplicate vocabulary for ingest, merge and import; import's old words
# still work, with a warning.
for policy in skip keep-last; do
  cp -r "$fixtures/gulpio2_csv_jpeg" "$tmp/gio_$policy" && chmod -R u+w "$tmp/gio_$policy"
  check "import_policy_$policy" 0 "$gulpdb" import "$tmp/gio_$policy" --on-duplicate "$policy" \
    --quiet
done
expect_out import_policy_old_word_warns "keep-last is now spelled replace"
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
# Copies of an imported directory keep working (the index compares content,
# not times), once read by a user who cannot write the copy too (the verified
# .gmeta go to that user's cache); a missing .gmeta is no change, and export
# writes it again byte for byte, as often as asked.
check copy_r 0 cp -r "$gio2" "$tmp/gio_copy"
check copy_info 0 "$gulpdb" info "$tmp/gio_copy"
expect_out copy_info_videos "videos: +22"
check copy_check 0 "$gulpdb" check "$tmp/gio_copy" --deep --quiet
check copy_ro 0 cp -r "$gio2" "$tmp/gio_ro"
mkdir -p "$tmp/user_cache" && chown 65534:65534 "$tmp/user_cache" 2>/dev/null
check copy_ro_info 0 as_user env GULPDB_CACHE="$tmp/user_cache" "$gulpdb" info "$tmp/gio_ro"
check copy_ro_info_again 0 as_user env GULPDB_CACHE="$tmp/user_cache" "$gulpdb" ls "$tmp/gio_ro"
if [ "$(id -u)" -eq 0 ]; then
  check copy_ro_cached 0 test "$(ls "$tmp/user_cache/verified" | wc -l)" -eq 1
fi
rm "$tmp/gio_copy/meta_3.gmeta"
check missing_gmeta_info 0 "$gulpdb" show "$tmp/gio_copy" 7 --json
expect_out missing_gmeta_show '"label": "SQUARE"'
check missing_gmeta_check 0 "$gulpdb" check "$tmp/gio_copy"
expect_out missing_gmeta_note "meta_3.gmeta: missing"
check missing_gmeta_export 0 "$gulpdb" export "$tmp/gio_copy"
check missing_gmeta_export_again 0 "$gulpdb" export "$tmp/gio_copy"
check missing_gmeta_identical 0 cmp "$tmp/gio_copy/meta_3.gmeta" "$gio2/meta_3.gmeta"
# Removing every video of the newest chunk, then compacting, leaves every
# writer working, and the deleted chunk's number unused.
newest=$tmp/newest
check newest_ingest 0 "$gulpdb" ingest "$newest" --keep-jpeg --frames-dir "$fixtures/frames_src" \
  --labels "$fixtures/frames_src/labels.csv" --videos-per-chunk 4 --quiet
check newest_remove 0 "$gulpdb" remove "$newest" 20 21
check newest_compact 0 "$gulpdb" compact "$newest" --quiet
check newest_gone 1 test -e "$newest/data_5.gulp"
check newest_remove_more 0 "$gulpdb" remove "$newest" 0
check newest_compact_more 0 "$gulpdb" compact "$newest" --quiet
check newest_ingest_more 0 "$gulpdb" ingest "$newest" --keep-jpeg --frames-dir "$fixtures/frames_src" \
  --on-duplicate skip --quiet
check newest_split 0 "$gulpdb" split "$newest" some --ids-file /dev/stdin <<<"20"
check newest_index 0 "$gulpdb" index "$newest" --meta-key label
check newest_merge 0 "$gulpdb" merge "$newest" "$tmp/evil_ds" --quiet
check newest_check 0 "$gulpdb" check "$newest" --deep --quiet
check newest_not_reused 1 test -e "$newest/data_5.gulp"
check newest_ls 0 "$gulpdb" ls "$newest" --json
expect_out newest_chunk '"id": "20", "frames": 2, "chunk": 7'
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
expect_out compact_summary "compacted 2 chunks"
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
