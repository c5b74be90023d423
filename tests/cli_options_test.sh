#!/usr/bin/env bash
# The options every gulpdb command shares mean the same everywhere:
# --index-dir is taken by every command that opens or creates a dataset, and
# every numeric option refuses negative, zero (where zero means nothing),
# fractional, out-of-range and huge values as usage errors (exit 2) that name
# the option and the value, instead of wrapping them around.
#   cli_options_test.sh GULPDB_BINARY FIXTURES_DIR
set -uo pipefail
gulpdb=$1
fixtures=$2
source "$(dirname "$0")/cli_lib.sh"

# ---- --index-dir everywhere --------------------------------------------------------
# A GulpIO directory indexed elsewhere: every command reaches it through
# --index-dir, and none finds an index without it.
gio=$tmp/gio
idx=$tmp/gio_index
cp -r "$fixtures/gulpio2_csv_jpeg" "$gio" && chmod -R u+w "$gio"
check import_index_dir 0 "$gulpdb" import "$gio" --index-dir "$idx" --quiet
check import_index_dir_not_in_dir 1 test -e "$gio/gulpdb.index"
check info_index_dir 0 "$gulpdb" info "$gio" --index-dir "$idx" --json
expect_out info_index_dir_videos '"videos": 22'
check ls_index_dir 0 "$gulpdb" ls "$gio" --index-dir "$idx" --limit 3
expect_eq ls_index_dir_lines "$(wc -l <"$tmp/out")" 3
check show_index_dir 0 "$gulpdb" show "$gio" 3 --index-dir "$idx"
check extract_index_dir 0 "$gulpdb" extract "$gio" 3 -o "$tmp/frames" --index-dir "$idx"
check check_index_dir 0 "$gulpdb" check "$gio" --deep --quiet --index-dir "$idx"
check export_index_dir 0 "$gulpdb" export "$gio" -o "$tmp/export" --index-dir "$idx"
check export_index_dir_identical 0 cmp "$gio/meta_10.gmeta" "$tmp/export/meta_10.gmeta"
check remove_index_dir 0 "$gulpdb" remove "$gio" 3 --index-dir "$idx"
check compact_index_dir 0 "$gulpdb" compact "$gio" --quiet --index-dir "$idx"
check ingest_index_dir_extends 0 "$gulpdb" ingest "$gio" --index-dir "$idx" \
  --frames-dir "$fixtures/frames_src" --keep-jpeg --quiet
expect_out ingest_index_dir_extends_summary "ingested 1 videos .* 21 already present"
for cmd in info ls check compact export remove; do
  extra=()
  [ "$cmd" = remove ] && extra=(3)
  check "${cmd}_without_index_dir" 1 "$gulpdb" "$cmd" "$gio" "${extra[@]}"
  expect_out "${cmd}_without_index_dir_message" "no gulpdb index"
done
# Commands that create a dataset put its index there too.
check create_index_dir 0 "$gulpdb" create "$tmp/c" --index-dir "$tmp/c_index"
check create_index_dir_placed 0 test -f "$tmp/c_index/data.mdb" -a ! -e "$tmp/c/gulpdb.index"
check ingest_new_index_dir 0 "$gulpdb" ingest "$tmp/i" --index-dir "$tmp/i_index" \
  --frames-dir "$fixtures/frames_src" --quiet
check ingest_new_index_dir_placed 0 test -f "$tmp/i_index/data.mdb" -a ! -e "$tmp/i/gulpdb.index"
"$gulpdb" ingest "$tmp/shard" --frames-dir "$fixtures/frames_src" --quiet >/dev/null
check merge_index_dir 0 "$gulpdb" merge "$tmp/m" "$tmp/shard" --index-dir "$tmp/m_index" --quiet
check merge_index_dir_placed 0 test -f "$tmp/m_index/data.mdb" -a ! -e "$tmp/m/gulpdb.index"
check merge_index_dir_info 0 "$gulpdb" info "$tmp/m" --index-dir "$tmp/m_index" --json
expect_out merge_index_dir_videos '"videos": 22'
check index_dir_empty 2 "$gulpdb" info "$gio" --index-dir ""
expect_out index_dir_empty_message "--index-dir is an empty string"
for cmd in create ingest info ls show extract remove import export check compact merge view; do
  check "${cmd}_help_index_dir" 0 "$gulpdb" "$cmd" --help
  expect_out "${cmd}_help_index_dir_text" "--index-dir"
done

# ---- numbers ---------------------------------------------------------------------------
ds=$tmp/ds
"$gulpdb" ingest "$ds" --frames-dir "$fixtures/frames_src" --keep-jpeg --quiet >/dev/null
src=(--frames-dir "$fixtures/frames_src")
# command line | option | bad value
bad_numbers=(
  "create $tmp/n|videos-per-chunk|-5" "create $tmp/n|videos-per-chunk|0"
  "create $tmp/n|videos-per-chunk|4294967296" "create $tmp/n|videos-per-chunk|1.5"
  "create $tmp/n|videos-per-chunk|99999999999999999999999" "create $tmp/n|bytes-per-chunk|-1"
  "create $tmp/n|bytes-per-chunk|18446744073709551616" "create $tmp/n|bytes-per-chunk|1e6"
  "ingest $tmp/n|videos-per-chunk|-5" "ingest $tmp/n|bytes-per-chunk|-1"
  "ingest $tmp/n|num-workers|-3" "ingest $tmp/n|num-workers|100000"
  "ingest $tmp/n|batch|0" "ingest $tmp/n|batch|-1" "ingest $tmp/n|batch|+5"
  "ingest $tmp/n|quality|0" "ingest $tmp/n|quality|101" "ingest $tmp/n|quality|-90"
  "ingest $tmp/n|frame-size|-1" "ingest $tmp/n|frame-size|70000"
  "ingest $tmp/n|frame-rate|-1" "ingest $tmp/n|frame-rate|nan" "ingest $tmp/n|frame-rate|inf"
  "ingest $tmp/n|frame-rate|0x10" "ingest $tmp/n|frame-rate|1e999"
  "ingest $tmp/n|seed|-1" "ingest $tmp/n|seed|18446744073709551616" "ingest $tmp/n|seed| 7"
  "ls $ds|limit|-1" "ls $ds|limit|ten" "compact $ds|min-garbage|-0.1"
  "compact $ds|min-garbage|1.5" "compact $ds|wait|-1" "compact $ds|wait|nan"
  "meta $ds some_id --unset k|wait|-1" "relabel $ds --labels $tmp/no.json|wait|nan"
  "view $ds --no-browser|port|-1" "view $ds --no-browser|port|65536"
  "view $ds --no-browser|port|80.5" "view $ds --no-browser|thumb-size|8"
  "view $ds --no-browser|thumb-size|2000" "view $ds --static $tmp/n|limit|0"
  "view $ds --static $tmp/n|limit|-3"
)
for entry in "${bad_numbers[@]}"; do
  IFS='|' read -r cmdline option value <<<"$entry"
  read -ra words <<<"$cmdline"
  extra=()
  [ "${words[0]}" = ingest ] && extra=("${src[@]}" --shuffle --quiet)
  check "bad_${words[0]}_${option}_${value}" 2 "$gulpdb" "${words[@]}" "${extra[@]}" "--$option=$value"
  expect_text "bad_${words[0]}_${option}_${value}_named" "--$option must be"
  expect_text "bad_${words[0]}_${option}_${value}_value" "not '$value'"
done
check bad_number_nothing_created 1 test -e "$tmp/n"
# -j takes its value as the next word too, and it is refused the same way.
check bad_j_separate 2 "$gulpdb" ingest "$tmp/n" "${src[@]}" -j -3
expect_out bad_j_separate_message "--num-workers must be a whole number from 0 to 1024, not '-3'"
check bad_limit_separate 2 "$gulpdb" ls "$ds" --limit -1
check bad_empty_number 2 "$gulpdb" ingest "$tmp/n" "${src[@]}" --frame-rate ""
expect_text bad_empty_number_message "--frame-rate must be a number from 0 to 1000, not ''"
# Edge values that are valid are taken, and stored as given.
check max_videos_per_chunk 0 "$gulpdb" create "$tmp/e1" --videos-per-chunk 4294967295
check max_videos_per_chunk_stored 0 "$gulpdb" info "$tmp/e1" --json
expect_out max_videos_per_chunk_value '"videos_per_chunk": 4294967295'
check bytes_per_chunk_stored_cmd 0 "$gulpdb" create "$tmp/e2" --bytes-per-chunk 18446744073709551615
check bytes_per_chunk_stored 0 "$gulpdb" info "$tmp/e2" --json
expect_out bytes_per_chunk_value '"bytes_per_chunk": 18446744073709551615'
check edge_ingest 0 "$gulpdb" ingest "$tmp/e3" "${src[@]}" --quality 1 --frame-size 0 -j 0 \
  --batch 1 --shuffle --seed 18446744073709551615 --quiet
check limit_zero_is_all 0 "$gulpdb" ls "$ds" --limit 0
expect_eq limit_zero_lines "$(wc -l <"$tmp/out")" 22
check min_garbage_fraction 0 "$gulpdb" compact "$ds" --min-garbage 0.5 --wait 1.5 --quiet

# ---- options that would be ignored say so --------------------------------------------
check ignored_create_options 0 "$gulpdb" ingest "$ds" "${src[@]}" --videos-per-chunk 4 \
  --bytes-per-chunk 1000 --no-checksums --quiet
expect_out ignored_videos_per_chunk "warning: --videos-per-chunk 4 is ignored: .* existing dataset with 100 videos per chunk"
expect_out ignored_bytes_per_chunk "warning: --bytes-per-chunk 1000 is ignored: .* no byte limit per chunk"
expect_out ignored_no_checksums "warning: --no-checksums is ignored: .* a checksum per frame"
check same_create_options_silent 0 "$gulpdb" ingest "$ds" "${src[@]}" --videos-per-chunk 100 --quiet
expect_no_out same_create_options_silent_output "warning"
check ignored_seed 0 "$gulpdb" ingest "$ds" "${src[@]}" --seed 3 --quiet
expect_out ignored_seed_message "warning: --seed is ignored without --shuffle"
check new_dataset_takes_settings 0 "$gulpdb" ingest "$tmp/s" "${src[@]}" --videos-per-chunk 4 \
  --no-checksums --quiet
expect_no_out new_dataset_takes_settings_silent "warning"
check new_dataset_settings 0 "$gulpdb" info "$tmp/s" --json
expect_out new_dataset_settings_values '"chunks": 6, .*"videos_per_chunk": 4, .*"checksums": false'

# ---- URLs where a command needs local files --------------------------------------------
# Refused as usage errors before any request (the bucket need not exist).
check export_to_a_url 2 "$gulpdb" export s3://gulpdb-no-bucket/ds -o s3://gulpdb-no-bucket/out
expect_text export_to_a_url_message "-o s3://gulpdb-no-bucket/out is a URL: export writes .gmeta files into a local directory"
expect_text export_to_a_url_push "gulpdb push DIR s3://BUCKET/PREFIX"
check export_local_to_a_url 2 "$gulpdb" export "$ds" -o s3://gulpdb-no-bucket/out
check merge_a_url_shard 2 "$gulpdb" merge "$tmp/m_url" "$ds" s3://gulpdb-no-bucket/shard --quiet
expect_text merge_a_url_shard_message "SHARD s3://gulpdb-no-bucket/shard is a URL: merge attaches or copies the chunk files of local shard datasets"
expect_text merge_a_url_shard_how "aws s3 sync s3://gulpdb-no-bucket/shard DIR"
check merge_a_url_shard_nothing_created 1 test -e "$tmp/m_url"
# Every command that only reads says in its --help that DIR may be a URL.
for cmd in info ls show extract check export index split view; do
  check "${cmd}_help_url" 0 "$gulpdb" "$cmd" --help
  expect_text "${cmd}_help_url_text" "s3://BUCKET/PREFIX"
done

# ---- ingest's options are one table (gulpdb/ingest.h) ------------------------------------
check ingest_ffmpeg_option 1 "$gulpdb" ingest "$tmp/ff" --videos-dir "$fixtures/videos_src" \
  --labels "$fixtures/videos_src/videos.json" --label-name template --ffmpeg gulpdb-no-ffmpeg \
  --strict --quiet
expect_text ingest_ffmpeg_option_named "gulpdb-no-ffmpeg"
check create_takes_the_table_settings 2 "$gulpdb" create "$tmp/c2" --no-checksums --bytes-per-chunk x
expect_text create_takes_the_table_settings_message "--bytes-per-chunk must be a whole number >= 0, not 'x'"

finish
