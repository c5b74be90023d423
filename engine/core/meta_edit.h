// Meta edits (Writer::UpdateMeta, Writer::SetMeta): the new `meta_data` list
// of a video whose meta changes, computed as text so that every byte the
// edit does not touch stays as it was (engine/json/json_text.h). A video's
// meta is the first entry of its list, the one GulpIO2 returns; the other
// entries (GulpIO keeps one per append of the id in a chunk) stay verbatim.
//
// The rules (docs/edits.md):
//   - merge: the first entry must be a JSON object; each key of the patch
//     replaces that key's value in place (the first of duplicated keys; the
//     later ones go, as Python reads only the last), a key it lacks is added
//     at the end, in the patch's order, and a key whose patch value is
//     `null` is deleted. A video whose list is empty gets the patch (without
//     its nulls) as its first entry.
//   - replace: the first entry becomes the given object, whatever it was
//     (an entry that is not an object included); an empty list gets it.
// Thread safety: pure functions.
#ifndef GULPDB_ENGINE_CORE_META_EDIT_H_
#define GULPDB_ENGINE_CORE_META_EDIT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/dataset_impl.h"
#include "engine/core/payload_codec.h"
#include "engine/query/query_txn.h"
#include "index/lmdb_env.h"
#include "index/records.h"

namespace gulpdb::engine {

// The canonical text (NormalizeJson) of `json`, which must be one JSON
// object: InvalidArgumentError "<operation>: ..." otherwise.
std::string CanonicalMetaObject(std::string_view json, const std::string& operation);

// `meta_list` (a JSON list, as the index stores it) with its first entry
// merged with `patch` (canonical object text). Throws InvalidArgumentError
// "<operation>: ..." when the first entry is not an object, and
// CorruptionError when `meta_list` is not a JSON list.
std::string MergeFirstMeta(std::string_view meta_list, std::string_view patch,
                           const std::string& operation);

// `meta_list` with its first entry replaced by `meta` (canonical object text).
std::string ReplaceFirstMeta(std::string_view meta_list, std::string_view meta,
                             const std::string& operation);

// The meta_data list of the committed video `id` in `txn`'s snapshot,
// verified as FindRecord verifies its record but without materialising the
// frames; nullopt when the index lacks the id.
std::optional<std::string> CommittedMeta(const DatasetImpl& ds, const index::Txn& txn,
                                         std::string_view id);

// ---- The edits of a Writer's batch -------------------------------------------
//
// id -> the video's new meta_data list, for committed videos only (an edit of
// a video appended in the same batch changes its pending record instead).
// A journal record carries them after the removals (payload version 2;
// docs/format/journal_format.md), so that recovery replays the edit.
using MetaEdits = std::map<std::string, std::string>;

void EncodeMetaEdits(const MetaEdits& edits, std::string* out);
// Reads what EncodeMetaEdits wrote into `*edits` (added to it).
void DecodeMetaEdits(PayloadReader* in, MetaEdits* edits);

// Inside `txn`: gives each edited video its new meta_data (nothing else of its
// record changes: its frames, chunk and place stay), keeps its meta index
// entries right, and counts the edit in its chunk's record (`chunk_ref`
// returns the record the transaction will write). Throws CorruptionError for
// an edited id the transaction does not hold (the writer checked them all
// under its lock: that means a damaged journal or index).
void ApplyMetaEdits(const DatasetImpl& ds, index::Txn& txn, QueryTxn& query, const MetaEdits& edits,
                    const std::function<index::ChunkRecord&(uint32_t)>& chunk_ref);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_CORE_META_EDIT_H_
