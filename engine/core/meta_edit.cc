#include "engine/core/meta_edit.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {
namespace {

// Where the first entry of the list `meta_list` lies: [begin, end), or
// begin == end at the closing bracket of an empty list.
struct FirstEntry {
  size_t begin = 0;
  size_t end = 0;
};

FirstEntry FindFirstEntry(std::string_view meta_list, const std::string& operation) {
  const size_t pos = SkipJsonSpace(meta_list, 0);
  const JsonScanResult all = ScanJsonValue(meta_list, pos, /*input_complete=*/true);
  if (all.status != JsonScanStatus::kOk || pos >= meta_list.size() || meta_list[pos] != '[' ||
      SkipJsonSpace(meta_list, all.pos) != meta_list.size()) {
    throw CorruptionError(operation + ": the stored meta_data is not a JSON list");
  }
  FirstEntry first;
  first.begin = SkipJsonSpace(meta_list, pos + 1);
  first.end = first.begin;
  if (meta_list[first.begin] != ']') {
    first.end = ScanJsonValue(meta_list, first.begin, true).pos;
  }
  return first;
}

std::string WithFirst(std::string_view meta_list, const FirstEntry& first, std::string_view entry) {
  std::string out(meta_list.substr(0, first.begin));
  out += entry;  // an empty list: begin == end, at its ']'
  out.append(meta_list.substr(first.end));
  return out;
}

void AppendMember(std::string* out, std::string_view key_token, std::string_view value) {
  if (out->size() > 1) *out += ", ";
  *out += key_token;
  *out += ": ";
  *out += value;
}

}  // namespace

std::string CanonicalMetaObject(std::string_view json, const std::string& operation) {
  std::string meta;
  try {
    meta = NormalizeJson(json);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(operation + ": the meta is not valid JSON: " + e.what());
  }
  if (meta.empty() || meta.front() != '{') {
    throw InvalidArgumentError(operation + ": the meta must be a JSON object, not " +
                               PrintableBytes(meta, 40));
  }
  return meta;
}

std::string MergeFirstMeta(std::string_view meta_list, std::string_view patch,
                           const std::string& operation) {
  const FirstEntry first = FindFirstEntry(meta_list, operation);
  const std::vector<JsonMember> changes = JsonObjectMembers(patch, 0, /*lone_surrogates=*/true);
  std::unordered_map<std::string_view, const JsonMember*> by_key;
  for (const JsonMember& c : changes) by_key[c.key] = &c;  // the last one counts, as in Python
  const auto value_of = [&](const JsonMember& m) {
    return patch.substr(m.value_pos, m.value_end - m.value_pos);
  };
  const auto key_of = [](std::string_view text, const JsonMember& m) {
    const size_t end = ScanJsonValue(text, m.key_pos, true).pos;
    return text.substr(m.key_pos, end - m.key_pos);
  };
  std::string out = "{";
  std::unordered_set<std::string_view> done;
  if (first.begin != first.end) {
    if (meta_list[first.begin] != '{') {
      throw InvalidArgumentError(operation + ": the video's meta is not a JSON object (" +
                                 PrintableBytes(meta_list.substr(first.begin, 40)) +
                                 "), so it has no keys to update; replace it with set meta");
    }
    for (const JsonMember& m : JsonObjectMembers(meta_list, first.begin, true)) {
      auto it = by_key.find(m.key);
      if (it == by_key.end()) {
        AppendMember(&out, key_of(meta_list, m),
                     meta_list.substr(m.value_pos, m.value_end - m.value_pos));
        continue;
      }
      if (!done.insert(it->first).second) continue;  // a later duplicate of a changed key
      if (value_of(*it->second) != "null") {
        AppendMember(&out, key_of(meta_list, m), value_of(*it->second));
      }
    }
  }
  for (const JsonMember& c : changes) {
    if (by_key.at(c.key) != &c || done.count(c.key) != 0) continue;
    if (value_of(c) != "null") AppendMember(&out, key_of(patch, c), value_of(c));
  }
  out += "}";
  return WithFirst(meta_list, first, out);
}

std::optional<std::string> CommittedMeta(const DatasetImpl& ds, const index::Txn& txn,
                                         std::string_view id) {
  std::string_view bytes;
  if (!txn.Get(ds.videos, id, &bytes)) return std::nullopt;
  const std::string_view record = ds.Unseal(id, bytes, index::RecordKind::kVideo);
  return std::string(index::DecodeVideoMeta(record, id).meta_data);
}

void EncodeMetaEdits(const MetaEdits& edits, std::string* out) {
  PutU32(out, static_cast<uint32_t>(edits.size()));
  for (const auto& [id, meta] : edits) {
    PutBytes(out, id);
    PutBytes(out, meta);
  }
}

void DecodeMetaEdits(PayloadReader* in, MetaEdits* edits) {
  const uint64_t n = in->Fixed(4);
  for (uint64_t i = 0; i < n; ++i) {
    std::string id(in->Sized());
    (*edits)[std::move(id)] = std::string(in->Sized());
  }
}

void ApplyMetaEdits(const DatasetImpl& ds, index::Txn& txn, QueryTxn& query, const MetaEdits& edits,
                    const std::function<index::ChunkRecord&(uint32_t)>& chunk_ref) {
  for (const auto& [id, meta] : edits) {
    std::optional<index::VideoRecord> before = ds.FindRecord(txn, id);
    if (!before) {
      throw CorruptionError("edit meta of '" + PrintableBytes(id) + "' in " + ds.dir +
                            ": the video is not in the index the edit applies to");
    }
    index::VideoRecord after = *before;
    after.meta_data = meta;
    ds.PutVideo(txn, id, after);
    query.Reindex(id, *before, after);
    ++chunk_ref(after.chunk).meta_edits;
  }
}

std::string ReplaceFirstMeta(std::string_view meta_list, std::string_view meta,
                             const std::string& operation) {
  return WithFirst(meta_list, FindFirstEntry(meta_list, operation), meta);
}

}  // namespace gulpdb::engine
