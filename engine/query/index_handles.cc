#include "engine/query/index_handles.h"

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "engine/query/value_order.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

std::vector<MetaField> MakeMetaFields(
    const std::vector<std::pair<std::string, index::MetaFieldValue>>& fields,
    const std::string& where) {
  std::vector<MetaField> out;
  out.reserve(fields.size());
  for (const auto& [name, value] : fields) {
    MetaField f;
    f.name = name;
    f.number = value.number;
    f.form = value.form;
    try {
      f.quoted = PythonJsonString(name);
    } catch (const InvalidArgumentError&) {
      throw CorruptionError(where + ": meta index field name '" + PrintableBytes(name, 40) +
                            "' is not UTF-8");
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string MetaKeyValue(index::MetaKeyForm form, std::string_view json) {
  return form == index::MetaKeyForm::kCanonical ? CanonicalMetaValue(json) : OrderedMetaValue(json);
}

namespace {

index::VideoMetaView MetaOf(const index::VideoRecord& r) {
  return index::VideoMetaView{r.chunk, r.seq, r.meta_data, static_cast<uint32_t>(r.frames.size())};
}

}  // namespace

std::optional<index::VideoMetaView> QuerySource::FindVideoMeta(std::string_view id,
                                                               index::VideoRecord* scratch) const {
  std::optional<index::VideoRecord> record = FindVideo(id);
  if (!record) return std::nullopt;
  *scratch = std::move(*record);
  return MetaOf(*scratch);
}

void QuerySource::ScanVideoMeta(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoMetaView&)>& fn) const {
  ScanVideos(from, to,
             [&](std::string_view id, const index::VideoRecord& r) { return fn(id, MetaOf(r)); });
}

std::vector<MetaField> SnapshotFields(const QuerySource& index, const std::string& dir) {
  return MakeMetaFields(index.MetaFields(), "read " + dir);
}

std::map<std::string, index::SplitHeader> SnapshotSplitHeaders(const QuerySource& index,
                                                               const std::string& dir,
                                                               const std::string& operation) {
  if (!index.SplitsOmitted()) return index.SplitHeaders();
  throw InvalidArgumentError(operation + " of " + dir +
                             ": the dataset has named splits, and this partitioned index "
                             "snapshot does not carry them (an older push with --layout "
                             "partitioned left them out): push it again, or read them from "
                             "the dataset itself");
}

std::string IndexHandles::Seal(std::string_view key, std::string value) const {
  return sealed ? index::Seal(key, std::move(value)) : value;
}

std::string_view IndexHandles::Unseal(std::string_view key, std::string_view value,
                                      index::RecordKind kind) const {
  return sealed ? index::Unseal(key, value, kind, dir) : value;
}

}  // namespace gulpdb::engine
