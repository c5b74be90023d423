// The read side of engine/query/ (see query_txn.h): Dataset::Select, the
// meta index and split listings, and the Dataset calls that create and drop
// meta indexes.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/index_handles.h"
#include "engine/query/meta_value.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "gulpdb/query.h"
#include "index/query_keys.h"
#include "index/seal.h"

namespace gulpdb {
namespace {

// A video that matched, in the order results are returned.
struct Match {
  uint32_t chunk = 0;
  uint64_t seq = 0;
  std::string id;
  bool operator<(const Match& o) const { return chunk != o.chunk ? chunk < o.chunk : seq < o.seq; }
};

struct Condition {
  std::string key;
  std::string quoted_key;
  std::set<std::string> values;   // canonical forms
  std::optional<uint32_t> field;  // set when the key has a meta index
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::vector<Condition> Prepare(const std::vector<MetaCondition>& conditions,
                               const std::string& dir) {
  std::vector<Condition> out;
  for (const MetaCondition& c : conditions) {
    Condition p;
    p.key = c.key;
    try {
      p.quoted_key = engine::PythonJsonString(c.key);
    } catch (const InvalidArgumentError&) {
      throw InvalidArgumentError("select in " + dir + ": the key '" +
                                 engine::PrintableBytes(c.key, 40) + "' is not valid UTF-8");
    }
    for (const std::string& value : c.values) {
      try {
        p.values.insert(engine::CanonicalMetaValue(value));
      } catch (const InvalidArgumentError& e) {
        throw InvalidArgumentError("select in " + dir + ": the value for key '" + c.key +
                                   "' is not JSON (" + e.what() +
                                   "): " + engine::PrintableBytes(value, 60));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

// One snapshot of what the read side reads: a read transaction of the LMDB
// index, or the dataset's index source (a partitioned snapshot). The one
// place where the two differ.
class IndexReader {
 public:
  explicit IndexReader(const engine::IndexHandles& ix) : ix_(ix) {
    if (ix.source != nullptr) return;
    ix.query.Refresh(*ix.env);
    dbs_ = ix.query.Load();
    txn_.emplace(ix.env->BeginRead());
  }
  const engine::IndexHandles& ix() const { return ix_; }

  // The indexed fields: (name, number).
  std::vector<std::pair<std::string, uint32_t>> Fields() {
    if (ix_.source != nullptr) return ix_.source->MetaFields();
    std::vector<std::pair<std::string, uint32_t>> out;
    for (engine::MetaField& f : engine::ReadMetaFields(*txn_, dbs_)) {
      out.emplace_back(std::move(f.name), f.number);
    }
    return out;
  }

  // The meta index entries whose key starts with `prefix`, in key order,
  // until `fn` returns false.
  void Entries(std::string_view prefix,
               const std::function<bool(std::string_view key, std::string_view id)>& fn) {
    if (ix_.source != nullptr) {
      ix_.source->ScanMeta(prefix, fn);
      return;
    }
    if (!dbs_.has_meta_index()) return;
    index::Cursor cursor(*txn_, dbs_.meta_index);
    for (bool ok = cursor.Seek(prefix); ok && StartsWith(cursor.key(), prefix);
         ok = cursor.Next()) {
      if (!fn(cursor.key(), cursor.value())) return;
    }
  }

  // The meta of `id`'s record, or nullopt when there is none. The view lasts
  // until the next call.
  std::optional<index::VideoMetaView> Meta(std::string_view id) {
    if (ix_.source != nullptr) {
      record_ = ix_.source->FindVideo(id);
      if (!record_) return std::nullopt;
      return index::VideoMetaView{record_->chunk, record_->seq, record_->meta_data};
    }
    std::string_view bytes;
    if (!txn_->Get(ix_.videos, id, &bytes)) return std::nullopt;
    return index::DecodeVideoMeta(ix_.Unseal(id, bytes, index::RecordKind::kVideo), id);
  }

  // Every video in id order, until `fn` returns false.
  void Videos(const std::function<bool(std::string_view id, const index::VideoMetaView&)>& fn) {
    if (ix_.source != nullptr) {
      ix_.source->ScanVideos({}, {}, [&](std::string_view id, const index::VideoRecord& r) {
        return fn(id, index::VideoMetaView{r.chunk, r.seq, r.meta_data});
      });
      return;
    }
    index::Cursor cursor(*txn_, ix_.videos);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      const std::string_view id = cursor.key();
      if (!fn(id, index::DecodeVideoMeta(ix_.Unseal(id, cursor.value(), index::RecordKind::kVideo),
                                         id))) {
        return;
      }
    }
  }

  // The split databases, or the index source's splits. A source that left
  // them out (a format 1 partitioned snapshot) makes asking an error.
  std::map<std::string, index::SplitHeader> SplitHeaders(const std::string& operation) {
    if (ix_.source != nullptr) {
      if (!ix_.source->SplitsOmitted()) return ix_.source->SplitHeaders();
      throw InvalidArgumentError(operation + " of " + ix_.dir +
                                 ": the dataset has named splits, and this partitioned index "
                                 "snapshot does not carry them (an older push with --layout "
                                 "partitioned left them out): push it again, or read them from "
                                 "the dataset itself");
    }
    return engine::ReadSplitHeaders(*txn_, dbs_);
  }
  std::vector<std::string> SplitIds(uint32_t split) {
    if (ix_.source != nullptr) return ix_.source->SplitIds(split);
    return engine::ReadSplitIds(*txn_, dbs_, split);
  }

 private:
  const engine::IndexHandles& ix_;
  engine::QueryDbHandles dbs_;
  std::optional<index::Txn> txn_;
  std::optional<index::VideoRecord> record_;
};

// Whether the meta of video `id` satisfies every condition in `conditions`.
bool Satisfies(std::string_view id, std::string_view meta_data,
               const std::vector<const Condition*>& conditions,
               const std::vector<std::string>& quoted_keys, const std::string& dir) {
  std::vector<std::string_view> values;
  std::string error;
  if (!engine::FindFirstEntryValues(meta_data, quoted_keys, &values, &error)) {
    throw CorruptionError("select in " + dir + ": meta of id '" + std::string(id) + "': " + error);
  }
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (values[i].empty()) return false;
    if (conditions[i]->values.count(engine::CanonicalMetaValue(values[i])) == 0) return false;
  }
  return true;
}

// The videos whose indexed field `c.field` has one of `c.values`, in
// (chunk, insertion) order.
std::vector<Match> Lookup(IndexReader& reader, const Condition& c) {
  std::vector<Match> out;
  for (const std::string& value : c.values) {
    const size_t before = out.size();
    const std::string prefix = index::MetaValuePrefix(*c.field, value);
    const bool verify = index::MetaValueHashed(value);
    std::vector<Match> candidates;
    reader.Entries(prefix, [&](std::string_view key, std::string_view id) {
      Match m;
      index::DecodeMetaEntryKey(key, &m.chunk, &m.seq);
      m.id = std::string(id);
      candidates.push_back(std::move(m));
      return true;
    });
    for (Match& m : candidates) {
      if (verify) {
        // Stored by length and checksum: make sure it is this value.
        const std::optional<index::VideoMetaView> meta = reader.Meta(m.id);
        if (!meta || !Satisfies(m.id, meta->meta_data, {&c}, {c.quoted_key}, reader.ix().dir)) {
          continue;
        }
      }
      out.push_back(std::move(m));
    }
    // Each value's entries come sorted; several values interleave. (Not for
    // the first: inplace_merge would still allocate a buffer as large.)
    if (before != 0) {
      std::inplace_merge(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    }
  }
  return out;
}

// The matches in both sorted lists (a video has one (chunk, seq)).
std::vector<Match> Intersect(std::vector<Match> a, const std::vector<Match>& b) {
  std::vector<Match> out;
  size_t j = 0;
  for (Match& m : a) {
    while (j < b.size() && b[j] < m) ++j;
    if (j < b.size() && !(m < b[j])) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

std::vector<std::string> Dataset::Select(const std::vector<MetaCondition>& conditions) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  std::vector<Condition> prepared = Prepare(conditions, ix.dir);
  if (prepared.empty()) return Ids();
  for (const Condition& c : prepared) {
    if (c.values.empty()) return {};
  }
  IndexReader reader(ix);
  for (const auto& [name, number] : reader.Fields()) {
    for (Condition& c : prepared) {
      if (c.key == name) c.field = number;
    }
  }
  std::vector<const Condition*> scanned;
  std::vector<std::string> scanned_keys;
  std::optional<std::vector<Match>> matches;
  for (const Condition& c : prepared) {
    if (!c.field) {
      scanned.push_back(&c);
      scanned_keys.push_back(c.quoted_key);
      continue;
    }
    std::vector<Match> found = Lookup(reader, c);
    matches = matches ? Intersect(std::move(*matches), found) : std::move(found);
    if (matches->empty()) return {};
  }
  std::vector<std::string> ids;
  if (matches) {
    // The index narrowed the candidates; the other conditions read their records.
    ids.reserve(matches->size());
    for (Match& m : *matches) {
      if (!scanned.empty()) {
        const std::optional<index::VideoMetaView> meta = reader.Meta(m.id);
        if (!meta) {
          throw CorruptionError("select in " + ix.dir + ": the meta index lists id '" + m.id +
                                "' that has no record");
        }
        if (!Satisfies(m.id, meta->meta_data, scanned, scanned_keys, ix.dir)) continue;
      }
      ids.push_back(std::move(m.id));
    }
    return ids;
  }
  // No index for any key: read every record (in key order, which is cheap),
  // then order the matches as Ids() orders videos.
  std::vector<Match> found;
  reader.Videos([&](std::string_view id, const index::VideoMetaView& video) {
    if (Satisfies(id, video.meta_data, scanned, scanned_keys, ix.dir)) {
      found.push_back(Match{video.chunk, video.seq, std::string(id)});
    }
    return true;
  });
  std::sort(found.begin(), found.end());
  ids.reserve(found.size());
  for (Match& m : found) ids.push_back(std::move(m.id));
  return ids;
}

std::vector<std::string> Dataset::Select(std::string_view key, std::string_view json_value) const {
  return Select({MetaCondition::Equals(std::string(key), std::string(json_value))});
}

void CheckMetaIndexKey(std::string_view key, const std::string& operation) {
  engine::ValidateQueryName(key, index::kMaxFieldNameBytes, "meta key", operation);
}

bool Dataset::CreateMetaIndex(std::string_view key, std::chrono::milliseconds lock_timeout) {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  CheckMetaIndexKey(key, "create meta index in " + ix.dir);
  WriterOptions options;
  options.lock_timeout = lock_timeout;
  std::unique_ptr<Writer> writer = NewWriter(options);  // the lock, and crash recovery
  return engine::BuildMetaIndex(ix, key);
}

bool Dataset::DropMetaIndex(std::string_view key, std::chrono::milliseconds lock_timeout) {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  WriterOptions options;
  options.lock_timeout = lock_timeout;
  std::unique_ptr<Writer> writer = NewWriter(options);
  const engine::QueryDbHandles dbs = ix.query.Load();  // refreshed by NewWriter
  if (!dbs.has_meta_index()) return false;
  bool dropped = false;
  ix.env->Update([&](index::Txn& txn) {
    dropped = false;
    std::string_view value;
    if (!txn.Get(dbs.meta_fields, key, &value)) return;
    const std::string prefix = index::MetaFieldPrefix(index::DecodeFieldNumber(value));
    for (;;) {
      std::vector<std::string> batch;
      {
        index::Cursor cursor(txn, dbs.meta_index);
        for (bool ok = cursor.Seek(prefix);
             ok && StartsWith(cursor.key(), prefix) && batch.size() < 4096; ok = cursor.Next()) {
          batch.emplace_back(cursor.key());
        }
      }
      for (const std::string& k : batch) txn.Del(dbs.meta_index, k);
      if (batch.size() < 4096) break;
    }
    txn.Del(dbs.meta_fields, key);
    dropped = true;
  });
  return dropped;
}

std::vector<std::string> Dataset::MetaIndexes() const {
  IndexReader reader(engine::IndexOf(*this));
  std::vector<std::string> names;
  for (auto& field : reader.Fields()) names.push_back(std::move(field.first));
  return names;
}

std::vector<std::string> Dataset::AbsentMetaKeys(const std::vector<std::string>& keys) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  if (keys.empty()) return {};
  IndexReader reader(ix);
  std::vector<bool> seen(keys.size(), false);
  std::vector<size_t> scanned;  // keys without a meta index
  std::map<std::string, uint32_t> fields;
  for (const auto& [name, number] : reader.Fields()) fields[name] = number;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto field = fields.find(keys[i]);
    if (field == fields.end()) {
      scanned.push_back(i);
      continue;
    }
    reader.Entries(index::MetaFieldPrefix(field->second), [&](std::string_view, std::string_view) {
      seen[i] = true;
      return false;
    });
  }
  if (!scanned.empty()) {
    std::vector<std::string> quoted;
    for (size_t i : scanned) {
      try {
        quoted.push_back(engine::PythonJsonString(keys[i]));
      } catch (const InvalidArgumentError&) {
        throw InvalidArgumentError("look up meta key '" + engine::PrintableBytes(keys[i], 40) +
                                   "' in " + ix.dir + ": it is not valid UTF-8");
      }
    }
    size_t missing = scanned.size();
    std::vector<std::string_view> values;
    std::string error;
    reader.Videos([&](std::string_view id, const index::VideoMetaView& video) {
      if (!engine::FindFirstEntryValues(video.meta_data, quoted, &values, &error)) {
        throw CorruptionError("look up meta keys in " + ix.dir + ": meta of id '" +
                              std::string(id) + "': " + error);
      }
      for (size_t j = 0; j < scanned.size(); ++j) {
        if (!seen[scanned[j]] && !values[j].empty()) {
          seen[scanned[j]] = true;
          --missing;
        }
      }
      return missing != 0;
    });
  }
  std::vector<std::string> absent;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!seen[i]) absent.push_back(keys[i]);
  }
  return absent;
}

std::vector<SplitInfo> Dataset::Splits() const {
  IndexReader reader(engine::IndexOf(*this));
  std::vector<SplitInfo> out;
  for (const auto& [name, header] : reader.SplitHeaders("list splits")) {
    out.push_back(SplitInfo{name, header.count});
  }
  return out;
}

std::vector<std::string> Dataset::Split(std::string_view name) const {
  const engine::IndexHandles& ix = engine::IndexOf(*this);
  IndexReader reader(ix);
  const std::map<std::string, index::SplitHeader> headers =
      reader.SplitHeaders("read split '" + std::string(name) + "'");
  const auto it = headers.find(std::string(name));
  if (it == headers.end()) {
    std::string known;
    for (const auto& entry : headers) known += (known.empty() ? "" : ", ") + entry.first;
    throw NameNotFoundError(
        "read split '" + std::string(name) + "' of " + ix.dir + ": no such split (" +
        (known.empty() ? std::string("the dataset has none") : "known splits: " + known) + ")");
  }
  return reader.SplitIds(it->second.number);
}

MetaCondition ParseMetaCondition(std::string_view term) {
  const size_t eq = term.find('=');
  if (eq == std::string_view::npos) {
    throw InvalidArgumentError("meta condition '" + engine::PrintableBytes(term, 60) +
                               "': expected KEY=VALUE");
  }
  MetaCondition c;
  c.key = std::string(term.substr(0, eq));
  const std::string_view value = term.substr(eq + 1);
  std::string as_string;
  try {
    as_string = engine::PythonJsonString(value);
  } catch (const InvalidArgumentError&) {
    throw InvalidArgumentError("meta condition '" + engine::PrintableBytes(term, 60) +
                               "': the value is not valid UTF-8");
  }
  try {
    const std::string canonical = engine::CanonicalMetaValue(value);
    c.values.emplace_back(value);
    if (canonical.empty() || canonical[0] != '"') c.values.push_back(as_string);
  } catch (const InvalidArgumentError&) {
    c.values.push_back(as_string);  // not JSON: the text itself
  }
  return c;
}

}  // namespace gulpdb
