#include "engine/query/query_txn.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"
#include "index/seal.h"
#include "util/env.h"
#include "util/test_bug.h"
#include "util/utf8.h"

namespace gulpdb::engine {
namespace {

constexpr size_t kDeleteBatch = 4096;  // keys collected before deleting them

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Deletes every key of `dbi` that starts with `prefix`; calls on_delete(key,
// value) for each first.
void DeletePrefix(index::Txn& txn, index::Dbi dbi, std::string_view prefix,
                  const std::function<void(std::string_view, std::string_view)>& on_delete) {
  for (;;) {
    std::vector<std::pair<std::string, std::string>> batch;
    {
      index::Cursor cursor(txn, dbi);
      for (bool ok = cursor.Seek(prefix);
           ok && StartsWith(cursor.key(), prefix) && batch.size() < kDeleteBatch;
           ok = cursor.Next()) {
        batch.emplace_back(cursor.key(), cursor.value());
      }
    }
    for (const auto& [key, value] : batch) {
      if (on_delete) on_delete(key, value);
      txn.Del(dbi, key);
    }
    if (batch.size() < kDeleteBatch) return;
  }
}

}  // namespace

void ValidateQueryName(std::string_view name, size_t max_bytes, const char* what,
                       const std::string& operation) {
  if (name.empty()) throw InvalidArgumentError(operation + ": the " + what + " is empty");
  if (name.size() > max_bytes) {
    throw InvalidArgumentError(operation + ": the " + what + " has " + std::to_string(name.size()) +
                               " bytes, more than " + std::to_string(max_bytes));
  }
  if (const size_t bad = util::FindInvalidUtf8(name); bad != std::string_view::npos) {
    throw InvalidArgumentError(operation + ": the " + what + " '" + PrintableBytes(name, 40) +
                               "' is not valid UTF-8 at byte " + std::to_string(bad));
  }
}

std::vector<MetaField> ReadMetaFields(index::Txn& txn, const QueryDbHandles& dbs) {
  if (!dbs.has_meta_index()) return {};
  std::vector<std::pair<std::string, index::MetaFieldValue>> fields;
  index::Cursor cursor(txn, dbs.meta_fields);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    fields.emplace_back(std::string(cursor.key()), index::DecodeMetaField(cursor.value()));
  }
  return MakeMetaFields(fields, "read meta_fields");
}

namespace {

// MetaEntryKeys with the fields' quoted names (`quoted`) at hand.
std::vector<std::string> EntryKeysOf(const std::vector<MetaField>& fields,
                                     const std::vector<std::string>& quoted, std::string_view id,
                                     std::string_view meta_data, uint32_t chunk, uint64_t seq,
                                     const std::string& where) {
  std::vector<std::string> keys;
  if (fields.empty()) return keys;
  std::vector<std::string_view> values;
  std::string error;
  if (!FindFirstEntryValues(meta_data, quoted, &values, &error)) {
    throw CorruptionError("index meta of id '" + std::string(id) + "' in " + where + ": " + error);
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (values[i].empty()) continue;
    keys.push_back(index::MetaEntryKey(fields[i].number, fields[i].form,
                                       MetaKeyValue(fields[i].form, values[i]), chunk, seq));
  }
  return keys;
}

}  // namespace

std::vector<std::string> MetaEntryKeys(const std::vector<MetaField>& fields, std::string_view id,
                                       std::string_view meta_data, uint32_t chunk, uint64_t seq,
                                       const std::string& where) {
  std::vector<std::string> quoted;
  quoted.reserve(fields.size());
  for (const MetaField& f : fields) quoted.push_back(f.quoted);
  return EntryKeysOf(fields, quoted, id, meta_data, chunk, seq, where);
}

std::map<std::string, index::SplitHeader> ReadSplitHeaders(index::Txn& txn,
                                                           const QueryDbHandles& dbs) {
  std::map<std::string, index::SplitHeader> out;
  if (!dbs.has_splits()) return out;
  index::Cursor cursor(txn, dbs.splits);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    out.emplace(std::string(cursor.key()), index::DecodeSplitHeader(cursor.value(), cursor.key()));
  }
  return out;
}

std::vector<std::string> ReadSplitIds(index::Txn& txn, const QueryDbHandles& dbs, uint32_t split) {
  std::vector<std::string> ids;
  if (!dbs.has_splits()) return ids;
  const std::string prefix = index::SplitMemberPrefix(split);
  index::Cursor cursor(txn, dbs.split_members);
  for (bool ok = cursor.Seek(prefix); ok && StartsWith(cursor.key(), prefix); ok = cursor.Next()) {
    ids.emplace_back(cursor.value());
  }
  return ids;
}

// ---- QueryTxn ---------------------------------------------------------------------

QueryTxn::QueryTxn(const IndexHandles& ds, index::Txn& txn, const QueryDbHandles& dbs)
    : ds_(ds), txn_(txn), dbs_(dbs) {
  fields_ = ReadMetaFields(txn, dbs);
  for (const MetaField& f : fields_) quoted_.push_back(f.quoted);
}

std::vector<std::string> QueryTxn::EntryKeys(std::string_view id, std::string_view meta_data,
                                             uint32_t chunk, uint64_t seq) const {
  return EntryKeysOf(fields_, quoted_, id, meta_data, chunk, seq, ds_.dir);
}

void QueryTxn::Index(std::string_view id, const index::VideoRecord& record) {
  for (const std::string& key : EntryKeys(id, record.meta_data, record.chunk, record.seq)) {
    txn_.Put(dbs_.meta_index, key, id);
  }
}

void QueryTxn::Unindex(std::string_view id, const index::VideoRecord& record) {
  for (const std::string& key : EntryKeys(id, record.meta_data, record.chunk, record.seq)) {
    txn_.Del(dbs_.meta_index, key);
  }
}

void QueryTxn::Reindex(std::string_view id, const index::VideoRecord& before,
                       const index::VideoRecord& after) {
  if (fields_.empty()) return;
  std::vector<std::string> old_keys = EntryKeys(id, before.meta_data, before.chunk, before.seq);
  std::vector<std::string> new_keys = EntryKeys(id, after.meta_data, after.chunk, after.seq);
  std::sort(old_keys.begin(), old_keys.end());
  std::sort(new_keys.begin(), new_keys.end());
  for (const std::string& key : old_keys) {
    if (!std::binary_search(new_keys.begin(), new_keys.end(), key)) txn_.Del(dbs_.meta_index, key);
  }
  for (const std::string& key : new_keys) {
    if (!std::binary_search(old_keys.begin(), old_keys.end(), key)) {
      txn_.Put(dbs_.meta_index, key, id);
    }
  }
}

index::SplitHeader* QueryTxn::HeaderOf(uint32_t split, std::string* name) {
  if (!splits_) splits_ = ReadSplitHeaders(txn_, dbs_);
  for (auto& [n, h] : *splits_) {
    if (h.number == split) {
      *name = n;
      return &h;
    }
  }
  return nullptr;
}

void QueryTxn::AddRef(std::string_view id, index::SplitRef ref) {
  std::string_view bytes;
  std::vector<index::SplitRef> refs;
  if (txn_.Get(dbs_.split_refs, id, &bytes)) refs = index::DecodeSplitRefs(bytes, id);
  const auto at = std::lower_bound(
      refs.begin(), refs.end(), ref,
      [](const index::SplitRef& a, const index::SplitRef& b) { return a.split < b.split; });
  refs.insert(at, ref);
  txn_.Put(dbs_.split_refs, id, index::EncodeSplitRefs(refs));
}

void QueryTxn::DropRef(std::string_view id, index::SplitRef ref) {
  std::string_view bytes;
  if (!txn_.Get(dbs_.split_refs, id, &bytes)) return;
  std::vector<index::SplitRef> refs = index::DecodeSplitRefs(bytes, id);
  refs.erase(std::remove_if(refs.begin(), refs.end(),
                            [&](const index::SplitRef& r) {
                              return r.split == ref.split && r.position == ref.position;
                            }),
             refs.end());
  if (refs.empty()) {
    txn_.Del(dbs_.split_refs, id);
  } else {
    txn_.Put(dbs_.split_refs, id, index::EncodeSplitRefs(refs));
  }
}

void QueryTxn::DropFromSplits(std::string_view id) {
  if (!dbs_.has_splits()) return;
  std::string_view bytes;
  if (!txn_.Get(dbs_.split_refs, id, &bytes)) return;
  const std::vector<index::SplitRef> refs = index::DecodeSplitRefs(bytes, id);
  txn_.Del(dbs_.split_refs, id);
  for (const index::SplitRef& ref : refs) {
    txn_.Del(dbs_.split_members, index::SplitMemberKey(ref.split, ref.position));
    std::string name;
    if (index::SplitHeader* header = HeaderOf(ref.split, &name)) {
      header->count -= std::min<uint64_t>(header->count, 1);
      txn_.Put(dbs_.splits, name, index::EncodeSplitHeader(*header));
    }
  }
}

void QueryTxn::ClearSplit(uint32_t split) {
  DeletePrefix(txn_, dbs_.split_members, index::SplitMemberPrefix(split),
               [&](std::string_view key, std::string_view id) {
                 DropRef(id, index::DecodeSplitMemberKey(key));
               });
}

void QueryTxn::Apply(const SplitOp& op) {
  if (!dbs_.has_splits()) {
    throw InvalidArgumentError("apply split '" + op.name + "' to " + ds_.dir +
                               ": the split databases were not created");
  }
  if (!splits_) splits_ = ReadSplitHeaders(txn_, dbs_);
  auto it = splits_->find(op.name);
  uint32_t number = 0;
  if (it != splits_->end()) {
    number = it->second.number;
    ClearSplit(number);
  } else {
    for (const auto& entry : *splits_) number = std::max(number, entry.second.number + 1);
  }
  if (op.remove) {
    if (it != splits_->end()) {
      txn_.Del(dbs_.splits, op.name);
      splits_->erase(it);
    }
    return;
  }
  index::SplitHeader header;
  header.number = number;
  for (uint64_t position = 0; position < op.ids.size(); ++position) {
    const std::string& id = op.ids[position];
    std::string_view bytes;
    if (!txn_.Get(ds_.videos, id, &bytes)) continue;  // removed later in the batch
    txn_.Put(dbs_.split_members, index::SplitMemberKey(number, position), id);
    AddRef(id, index::SplitRef{number, position});
    ++header.count;
  }
  txn_.Put(dbs_.splits, op.name, index::EncodeSplitHeader(header));
  (*splits_)[op.name] = header;
}

// ---- building and checking ----------------------------------------------------------

namespace {

// The key form a new meta index gets: the newest, or the first one when a
// test asks for it (GULPDB_TEST_META_KEY_FORM=canonical: an index as the
// versions before the ordered form wrote it, to test that it is still read,
// kept and rebuilt).
index::MetaKeyForm NewFieldForm() {
  return util::EnvText("GULPDB_TEST_META_KEY_FORM") == "canonical" ? index::MetaKeyForm::kCanonical
                                                                   : index::kNewestMetaKeyForm;
}

// Puts the entries of `field` for every video.
void IndexEveryVideo(const IndexHandles& ds, index::Txn& txn, const QueryDbHandles& dbs,
                     const MetaField& field, const std::string& operation) {
  const std::vector<std::string> quoted = {field.quoted};
  std::vector<std::string_view> values;
  std::string error;
  index::Cursor cursor(txn, ds.videos);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    const std::string_view id = cursor.key();
    const index::VideoMetaView video =
        index::DecodeVideoMeta(ds.Unseal(id, cursor.value(), index::RecordKind::kVideo), id);
    if (!FindFirstEntryValues(video.meta_data, quoted, &values, &error)) {
      throw CorruptionError(operation + ": meta of id '" + std::string(id) + "': " + error);
    }
    if (values[0].empty()) continue;
    txn.Put(dbs.meta_index,
            index::MetaEntryKey(field.number, field.form, MetaKeyValue(field.form, values[0]),
                                video.chunk, video.seq),
            id);
  }
}

}  // namespace

bool DropMetaField(index::Txn& txn, const QueryDbHandles& dbs, std::string_view key) {
  std::string_view value;
  if (!txn.Get(dbs.meta_fields, key, &value)) return false;
  const uint32_t number = index::DecodeMetaField(value).number;
  DeletePrefix(txn, dbs.meta_index, index::MetaFieldPrefix(number), nullptr);
  txn.Del(dbs.meta_fields, key);
  return true;
}

MetaIndexBuild BuildMetaIndex(const IndexHandles& ds, std::string_view key) {
  const std::string operation = "create meta index in " + ds.dir;
  ValidateQueryName(key, index::kMaxFieldNameBytes, "meta key", operation);
  ds.query.Create(*ds.env);
  const QueryDbHandles dbs = ds.query.Load();
  MetaIndexBuild outcome = MetaIndexBuild::kExisted;
  std::optional<MetaField> split_rebuild;  // the seeded bug's second transaction
  ds.env->Update([&](index::Txn& txn) {
    outcome = MetaIndexBuild::kExisted;
    split_rebuild.reset();
    MetaField field;
    field.name = std::string(key);
    field.quoted = PythonJsonString(key);
    field.form = NewFieldForm();
    std::string_view existing;
    if (txn.Get(dbs.meta_fields, key, &existing)) {
      const index::MetaFieldValue old = index::DecodeMetaField(existing);
      if (old.form == field.form) return;
      // An older form: rebuilt under its number, in this one transaction.
      field.number = old.number;
      DeletePrefix(txn, dbs.meta_index, index::MetaFieldPrefix(old.number), nullptr);
      outcome = MetaIndexBuild::kRebuilt;
      if (util::TestBugEnabled("meta-rebuild-split")) {
        // The seeded bug: the new form is committed without its entries,
        // which a second transaction adds.
        txn.Put(dbs.meta_fields, key, index::EncodeMetaField({field.number, field.form}));
        split_rebuild = field;
        return;
      }
    } else {
      for (const MetaField& f : ReadMetaFields(txn, dbs)) {
        field.number = std::max(field.number, f.number + 1);
      }
      outcome = MetaIndexBuild::kBuilt;
    }
    txn.Put(dbs.meta_fields, key, index::EncodeMetaField({field.number, field.form}));
    IndexEveryVideo(ds, txn, dbs, field, operation);
  });
  if (split_rebuild) {
    ds.env->Update(
        [&](index::Txn& txn) { IndexEveryVideo(ds, txn, dbs, *split_rebuild, operation); });
  }
  return outcome;
}

void CheckQueryDatabases(const IndexHandles& ds,
                         const std::function<void(std::string, std::string)>& problem) {
  ds.query.Refresh(*ds.env);
  const QueryDbHandles dbs = ds.query.Load();
  if (!dbs.has_meta_index() && !dbs.has_splits()) return;
  index::Txn txn = ds.env->BeginRead();
  const std::string where_index = "meta index";
  // Meta index: every entry must be one a video's meta gives, and the reverse.
  std::vector<MetaField> fields;
  try {
    fields = ReadMetaFields(txn, dbs);
  } catch (const CorruptionError& e) {
    problem(where_index, e.what());
  }
  if (!fields.empty()) {
    std::set<uint32_t> numbers;
    for (const MetaField& f : fields) {
      if (!numbers.insert(f.number).second) {
        problem(where_index, "field number " + std::to_string(f.number) + " is used twice");
      }
    }
    // Every entry must be one its video's meta calls for; as entry keys are
    // unique, equal counts then mean that none is missing.
    QueryTxn maintenance(ds, txn, dbs);
    uint64_t expected = 0;
    {
      index::Cursor cursor(txn, ds.videos);
      for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        const std::string_view id = cursor.key();
        try {
          const index::VideoMetaView video =
              index::DecodeVideoMeta(ds.Unseal(id, cursor.value(), index::RecordKind::kVideo), id);
          expected += maintenance.EntryKeys(id, video.meta_data, video.chunk, video.seq).size();
        } catch (const CorruptionError& e) {
          problem("id '" + std::string(id) + "'", e.what());
        }
      }
    }
    uint64_t entries = 0;
    index::Cursor cursor(txn, dbs.meta_index);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      const std::string_view key = cursor.key();
      const std::string id(cursor.value());
      if (numbers.count(index::DecodeMetaEntryField(key)) == 0) {
        problem(where_index, "an entry of id '" + id + "' belongs to no indexed field");
        continue;
      }
      std::string_view bytes;
      bool valid = false;
      try {
        if (txn.Get(ds.videos, id, &bytes)) {
          const index::VideoMetaView video =
              index::DecodeVideoMeta(ds.Unseal(id, bytes, index::RecordKind::kVideo), id);
          const std::vector<std::string> keys =
              maintenance.EntryKeys(id, video.meta_data, video.chunk, video.seq);
          valid = std::find(keys.begin(), keys.end(), key) != keys.end();
        }
      } catch (const CorruptionError&) {
        // reported with the video above
      }
      if (valid) {
        ++entries;
      } else {
        problem(where_index,
                "an entry of id '" + id + "' matches no video's meta value, chunk and sequence");
      }
    }
    if (entries != expected) {
      problem(where_index, std::to_string(expected - std::min(expected, entries)) +
                               " entries that videos' meta call for are missing");
    }
  }
  if (!dbs.has_splits()) return;
  // Splits: members exist, counts match, back references agree.
  std::map<std::string, index::SplitHeader> headers;
  try {
    headers = ReadSplitHeaders(txn, dbs);
  } catch (const CorruptionError& e) {
    problem("splits", e.what());
    return;
  }
  std::map<uint32_t, std::string> names;
  for (const auto& [name, h] : headers) {
    if (!names.emplace(h.number, name).second) {
      problem("split '" + name + "'", "its number is used by split '" + names[h.number] + "'");
    }
  }
  std::map<uint32_t, uint64_t> counts;
  uint64_t members = 0;
  {
    index::Cursor cursor(txn, dbs.split_members);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      ++members;
      const index::SplitRef ref = index::DecodeSplitMemberKey(cursor.key());
      const std::string id(cursor.value());
      const auto name = names.find(ref.split);
      const std::string where = name == names.end() ? "split number " + std::to_string(ref.split)
                                                    : "split '" + name->second + "'";
      if (name == names.end()) problem(where, "has members but no name");
      ++counts[ref.split];
      std::string_view bytes;
      if (!txn.Get(ds.videos, id, &bytes)) problem(where, "lists id '" + id + "', not a video");
      std::vector<index::SplitRef> refs;
      if (txn.Get(dbs.split_refs, id, &bytes)) refs = index::DecodeSplitRefs(bytes, id);
      if (std::none_of(refs.begin(), refs.end(), [&](const index::SplitRef& r) {
            return r.split == ref.split && r.position == ref.position;
          })) {
        problem(where, "id '" + id + "' has no back reference to its place");
      }
    }
  }
  for (const auto& [name, h] : headers) {
    if (counts[h.number] != h.count) {
      problem("split '" + name + "'", "records " + std::to_string(h.count) + " ids but holds " +
                                          std::to_string(counts[h.number]));
    }
  }
  uint64_t refs_total = 0;
  index::Cursor cursor(txn, dbs.split_refs);
  for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
    refs_total += index::DecodeSplitRefs(cursor.value(), cursor.key()).size();
  }
  if (refs_total != members) {
    problem("splits", std::to_string(refs_total) + " back references for " +
                          std::to_string(members) + " members");
  }
}

}  // namespace gulpdb::engine
