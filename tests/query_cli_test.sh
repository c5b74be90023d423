#!/usr/bin/env bash
# End-to-end checks of the command line's metadata queries and named splits:
# `ls --where` with and without a meta index against a reference taken from
# `ls --meta`, `gulpdb index`, `gulpdb split`, `info`, and splits through
# export and import; the query language in --where (its errors, its
# fallback to KEY=VALUE, indexes of the first key form and their rebuild).
#   query_cli_test.sh GULPDB_BINARY FIXTURES_DIR
set -uo pipefail
gulpdb=$1
fixtures=$2
source "$(dirname "$0")/cli_lib.sh"

ds=$tmp/ds
check ingest 0 "$gulpdb" ingest "$ds" --keep-jpeg --frames-dir "$fixtures/frames_src" \
  --labels "$fixtures/frames_src/labels.csv" --videos-per-chunk 4 --quiet

# Every value compared below comes from a command whose exit status is checked
# (never from "$(gulpdb ... | cut)", where a failed command would print nothing
# and equal an expected empty answer).
# reference LABEL: $ref = the ids whose meta_data text has the label, in ls order;
# never empty.
reference() {
  check "reference_ls_$1" 0 "$gulpdb" ls "$ds" --meta
  ref=$(grep -F "\"label\": \"$1\"" "$tmp/out" | cut -f1)
  check "reference_nonempty_$1" 0 test -n "$ref"
}
# listed ARGS...: $ids = the ids `gulpdb ls DS ARGS...` prints; the command must succeed.
listed() {
  check "ls $*" 0 "$gulpdb" ls "$ds" "$@"
  ids=$(cut -f1 "$tmp/out")
}

compare_all() {  # compare_all WHEN: every label, by label and by idx, against the reference
  local label
  for label in circle square triangle; do
    reference "$label"
    listed --where "label=$label"
    expect_eq "where_${1}_$label" "$ids" "$ref"
  done
  # idx is a number: idx=0 is circle's, as a number; the string "0" is nobody's.
  reference circle
  listed --where idx=0
  expect_eq "where_number_$1" "$ids" "$ref"
  listed --where 'idx="0"'
  expect_eq "where_json_string_$1" "$ids" ""
  listed --where label=circle --where idx=0
  expect_eq "where_and_$1" "$ids" "$ref"
  listed --where label=circle --where idx=1
  expect_eq "where_and_empty_$1" "$ids" ""
}

compare_all scan
check index_create 0 "$gulpdb" index "$ds" --meta-key label --meta-key idx
expect_out index_create_message "built a meta index of 'label'"
check index_list 0 "$gulpdb" index "$ds"
expect_eq index_list_keys "$(cat "$tmp/out")" "$(printf 'idx\nlabel')"
check index_json 0 "$gulpdb" index "$ds" --json
expect_out index_json_keys '^\["idx", "label"\]$'
compare_all indexed

# Appends, replacements and removals keep the index right.
check ingest_more 0 "$gulpdb" ingest "$ds" --keep-jpeg --frames-dir "$fixtures/frames_src" \
  --labels "$fixtures/frames_src/labels.csv" --on-duplicate replace --quiet
check remove 0 "$gulpdb" remove "$ds" 0 4
compare_all after_writes
check compact 0 "$gulpdb" compact "$ds" --quiet
compare_all after_compact
check check_healthy 0 "$gulpdb" check "$ds" --quiet

# --where composes with --json, --meta and --limit.
check where_json 0 "$gulpdb" ls "$ds" --where label=square --json --meta --limit 2
expect_out where_json_shape '^\{"id": ".*", "frames": [0-9]+, "chunk": [0-9]+, "meta_data": \[\{'
cp "$tmp/out" "$tmp/where_json"
check where_json_lines 0 test "$(wc -l <"$tmp/where_json")" -eq 2
check where_json_label 1 grep -qv '"label": "square"' "$tmp/where_json"

check index_drop 0 "$gulpdb" index "$ds" --drop idx
check index_drop_again 1 "$gulpdb" index "$ds" --drop idx
expect_out index_drop_again_message "'idx' has no meta index"
compare_all one_dropped
# A request is checked whole before anything changes: a drop of a key without
# an index fails naming it (and what is indexed), and builds nothing.
check index_build_with_bad_drop 1 "$gulpdb" index "$ds" --meta-key idx --drop nothere --drop label
expect_text index_bad_drop_names "'nothere' has no meta index (indexed: 'label'); nothing was changed"
check index_bad_drop_keys 0 "$gulpdb" index "$ds" --json
expect_out index_bad_drop_nothing_built '^\["label"\]$'
check index_build_and_drop_same 2 "$gulpdb" index "$ds" --meta-key label --drop label
expect_out index_build_and_drop_same_message "'label' is given to both --meta-key and --drop"
check index_empty_key 2 "$gulpdb" index "$ds" --meta-key idx --meta-key ""
expect_out index_empty_key_message "--meta-key is an empty string"
check index_empty_drop 2 "$gulpdb" index "$ds" --meta-key idx --drop ""
expect_out index_empty_drop_message "--drop is an empty string"
check index_bad_key 1 "$gulpdb" index "$ds" --meta-key idx --meta-key $'\xff'
expect_out index_bad_key_message "the meta key .* is not valid UTF-8"
check index_after_refusals 0 "$gulpdb" index "$ds" --json
expect_out index_after_refusals_unchanged '^\["label"\]$'

# Splits.
listed --where label=circle
printf '%s\n' "$ids" | head -3 | tac >"$tmp/train.txt"
expect_eq train_ids_count "$(wc -l <"$tmp/train.txt")" 3
check split_set 0 "$gulpdb" split "$ds" train --ids-file "$tmp/train.txt"
expect_out split_set_message "split 'train': 3 ids"
check split_show 0 "$gulpdb" split "$ds" train
expect_eq split_order "$(cat "$tmp/out")" "$(cat "$tmp/train.txt")"
check split_where 0 "$gulpdb" split "$ds" val --where label=square
reference square
square_count=$(printf '%s\n' "$ref" | wc -l)
check split_list 0 "$gulpdb" split "$ds"
expect_eq split_list_lines "$(cat "$tmp/out")" "$(printf 'train\t3\nval\t%s' "$square_count")"
check split_json 0 "$gulpdb" split "$ds" --json
expect_out split_json_object "^\{\"train\": 3, \"val\": [0-9]+\}$"
check info_splits 0 "$gulpdb" info "$ds"
expect_out info_splits_line "splits: +train \(3\), val \([0-9]+\)"
expect_out info_index_line "meta indexes: +label"
check info_json_splits 0 "$gulpdb" info "$ds" --json
expect_out info_json_splits_member '"splits": \{"train": 3, "val": [0-9]+\}, "meta_indexes": \["label"\]\}$'
listed --split train
expect_eq ls_split "$ids" "$(cat "$tmp/train.txt")"
listed --split val --where label=circle
expect_eq ls_split_where "$ids" ""
reference square
listed --split val --where label=square
expect_eq ls_split_where_all "$ids" "$ref"

# A split naming missing ids is refused whole.
printf 'ghost\n%s\nphantom\n' "$(head -1 "$tmp/train.txt")" >"$tmp/bad.txt"
check split_missing 1 "$gulpdb" split "$ds" bad --ids-file "$tmp/bad.txt"
expect_out split_missing_message "2 ids are not in the dataset: 'ghost', 'phantom'"
check split_missing_none 0 "$gulpdb" split "$ds"
cp "$tmp/out" "$tmp/splits_listed"
check split_missing_not_set 1 grep -q '^bad' "$tmp/splits_listed"
check split_unknown 1 "$gulpdb" split "$ds" nope
expect_out split_unknown_message "no such split \(known splits: train, val\)"

# Removing a video removes it from its splits.
victim=$(head -1 "$tmp/train.txt")
check remove_in_split 0 "$gulpdb" remove "$ds" "$victim"
listed --split train
expect_eq split_after_remove "$ids" "$(tail -n +2 "$tmp/train.txt")"

# Splits survive export and import, and GulpIO sees only .gulp/.gmeta pairs.
out=$tmp/exported
check export 0 "$gulpdb" export "$ds" -o "$out"
check export_splits_file 0 test -f "$out/gulpdb_splits.json"
cp "$ds"/data_*.gulp "$out"/
check import 0 "$gulpdb" import "$out" --quiet --meta-key label
expect_out import_splits "2 splits"
check import_split 0 "$gulpdb" split "$out" train
expect_eq import_split_ids "$(cat "$tmp/out")" "$(tail -n +2 "$tmp/train.txt")"
check import_index 0 "$gulpdb" index "$out"
expect_eq import_index_keys "$(cat "$tmp/out")" "label"

check split_remove 0 "$gulpdb" split "$ds" val --remove
check split_remove_again 1 "$gulpdb" split "$ds" val --remove

# The query language (docs/query.md): against a reference computed here with
# awk from `ls --meta` (id, frames, meta_data), with label indexed and idx not.
check ql_reference 0 "$gulpdb" ls "$ds" --meta
cp "$tmp/out" "$tmp/all_meta"
ql_ref=$(awk -F'\t' '$2 >= 4 && ($3 ~ /"label": "circle"/ || $3 ~ /"label": "square"/) {print $1}' \
  "$tmp/all_meta")
check ql_reference_nonempty 0 test -n "$ql_ref"
listed --where "frames >= 4 and label in ('circle', 'square')"
expect_eq ql_and_in "$ids" "$ql_ref"
listed --where "frames >= 4" --where "label in ('circle', \"square\")"  # repeated: and
expect_eq ql_repeated_and "$ids" "$ql_ref"
listed --where "FRAMES >= 4 AND (label = 'circle' OR meta.label = 'square')"
check ql_keyword_case_is_not_a_key_case 0 test -z "$ids"  # FRAMES is a meta key
listed --where "frames >= 4 AND (label = 'circle' OR meta.label = 'square')"
expect_eq ql_keywords_any_case "$ids" "$ql_ref"
ql_not=$(awk -F'\t' '$3 !~ /"idx": 0/ {print $1}' "$tmp/all_meta")
listed --where "not idx = 0"
expect_eq ql_not "$ids" "$ql_not"
ql_range=$(awk -F'\t' '$3 ~ /"idx": [12]/ {print $1}' "$tmp/all_meta")
listed --where "idx > 0.5 and idx <= 2"
expect_eq ql_range_scan "$ids" "$ql_range"
ql_labels=$(awk -F'\t' '$3 ~ /"label": "(square|triangle)"/ {print $1}' "$tmp/all_meta")
listed --where "label >= 's'"
expect_eq ql_range_indexed "$ids" "$ql_labels"
# A key no video has is warned about, whatever else matches.
listed --where "lable = 'x' or label = 'circle'"
expect_text ql_absent_key_warning "gulpdb ls: warning: no video's meta has the key 'lable'"
# KEY=VALUE that is not a query keeps its old meaning (here: a string).
listed --where "label=circle and more"
expect_eq ql_old_meaning "$ids" ""
check ql_old_meaning_quiet 1 grep -q warning "$tmp/out"
# Text that is neither: exit 2, the query and a caret under the byte, before
# anything is opened.
check ql_syntax_error 2 "$gulpdb" ls "$ds" --where "frames >= and label = 'x'"
expect_text ql_syntax_message "--where: parse query: byte 10: expected a value"
expect_text ql_syntax_text "  frames >= and label = 'x'"
expect_out ql_syntax_caret "^            \^$"
check ql_syntax_error_first 2 "$gulpdb" ls "$tmp/no such dataset" --where "x >"
check ql_split_syntax_error 2 "$gulpdb" split "$ds" nope --where "label = cat"
expect_text ql_split_syntax_caret "  label = cat"
check ql_never_holds 2 "$gulpdb" ls "$ds" --where "idx != null"
expect_text ql_never_holds_hint "write 'has KEY and not KEY = null'"
# split --where takes a query.
check ql_split 0 "$gulpdb" split "$ds" big --where "frames >= 4 and label in ('circle', 'square')"
check ql_split_show 0 "$gulpdb" split "$ds" big
expect_eq ql_split_ids "$(cat "$tmp/out")" "$ql_ref"
check ql_split_empty 1 "$gulpdb" split "$ds" none --where "frames > 1000"
expect_text ql_split_empty_message "no video matches frames > 1000"

# An index of the first key form (made before indexes were ordered): listed
# as such, answers the same, and rebuilt by --meta-key.
check ql_old_form 0 env GULPDB_TEST_META_KEY_FORM=canonical "$gulpdb" index "$ds" --meta-key idx
check ql_old_form_list 0 "$gulpdb" index "$ds"
expect_text ql_old_form_listed "idx	(equality only, made by an older gulpdb: --meta-key KEY rebuilds it"
check ql_old_form_info 0 "$gulpdb" info "$ds"
expect_out ql_old_form_info_line "meta indexes: +idx \(equality only\), label$"
listed --where "idx > 0.5 and idx <= 2"
expect_eq ql_old_form_range "$ids" "$ql_range"
listed --where "not idx = 0"
expect_eq ql_old_form_not "$ids" "$ql_not"
check ql_rebuild 0 "$gulpdb" index "$ds" --meta-key idx
expect_text ql_rebuild_message "rebuilt the meta index of 'idx' in the ordered form"
check ql_rebuild_again 0 "$gulpdb" index "$ds" --meta-key idx
expect_text ql_rebuild_again_message "'idx' has a meta index already"
listed --where "idx > 0.5 and idx <= 2"
expect_eq ql_rebuilt_range "$ids" "$ql_range"
check ql_rebuilt_check 0 "$gulpdb" check "$ds" --quiet

# Usage errors.
check where_no_equals 2 "$gulpdb" ls "$ds" --where label
check split_both_sources 2 "$gulpdb" split "$ds" x --ids-file "$tmp/train.txt" --where a=b
check split_remove_with_source 2 "$gulpdb" split "$ds" x --remove --where a=b
check split_source_without_name 2 "$gulpdb" split "$ds" --where a=b

finish
