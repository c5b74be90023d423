#include "engine/query/index_reader.h"

#include <utility>

#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "index/seal.h"

namespace gulpdb::engine {
namespace {

bool Before(std::string_view key, std::string_view to) { return to.empty() || key < to; }

index::VideoMetaView MetaOf(const index::VideoRecord& r) {
  return index::VideoMetaView{r.chunk, r.seq, r.meta_data, static_cast<uint32_t>(r.frames.size())};
}

}  // namespace

IndexReader::IndexReader(const IndexHandles& ix) : ix_(ix) {
  if (ix.source != nullptr) return;
  ix.query.Refresh(*ix.env);
  dbs_ = ix.query.Load();
  txn_.emplace(ix.env->BeginRead());
}

std::vector<MetaField> IndexReader::Fields() {
  if (ix_.source != nullptr) return MakeMetaFields(ix_.source->MetaFields(), "read " + ix_.dir);
  return ReadMetaFields(*txn_, dbs_);
}

void IndexReader::Entries(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view key, std::string_view id)>& fn) {
  if (!to.empty() && to <= from) return;
  if (ix_.source != nullptr) {
    ix_.source->ScanMeta(from, to, fn);
    return;
  }
  if (!dbs_.has_meta_index()) return;
  index::Cursor cursor(*txn_, dbs_.meta_index);
  for (bool ok = from.empty() ? cursor.First() : cursor.Seek(from); ok && Before(cursor.key(), to);
       ok = cursor.Next()) {
    if (!fn(cursor.key(), cursor.value())) return;
  }
}

std::optional<index::VideoMetaView> IndexReader::Video(std::string_view id) {
  if (ix_.source != nullptr) {
    record_ = ix_.source->FindVideo(id);
    if (!record_) return std::nullopt;
    return MetaOf(*record_);
  }
  std::string_view bytes;
  if (!txn_->Get(ix_.videos, id, &bytes)) return std::nullopt;
  return index::DecodeVideoMeta(ix_.Unseal(id, bytes, index::RecordKind::kVideo), id);
}

void IndexReader::Videos(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoMetaView&)>& fn) {
  if (!to.empty() && to <= from) return;
  if (ix_.source != nullptr) {
    ix_.source->ScanVideos(from, to, [&](std::string_view id, const index::VideoRecord& r) {
      return fn(id, MetaOf(r));
    });
    return;
  }
  index::Cursor cursor(*txn_, ix_.videos);
  for (bool ok = from.empty() ? cursor.First() : cursor.Seek(from); ok && Before(cursor.key(), to);
       ok = cursor.Next()) {
    const std::string_view id = cursor.key();
    if (!fn(id, index::DecodeVideoMeta(ix_.Unseal(id, cursor.value(), index::RecordKind::kVideo),
                                       id))) {
      return;
    }
  }
}

std::map<std::string, index::SplitHeader> IndexReader::SplitHeaders(const std::string& operation) {
  if (ix_.source != nullptr) {
    if (!ix_.source->SplitsOmitted()) return ix_.source->SplitHeaders();
    throw InvalidArgumentError(operation + " of " + ix_.dir +
                               ": the dataset has named splits, and this partitioned index "
                               "snapshot does not carry them (an older push with --layout "
                               "partitioned left them out): push it again, or read them from "
                               "the dataset itself");
  }
  return ReadSplitHeaders(*txn_, dbs_);
}

std::vector<std::string> IndexReader::SplitIds(uint32_t split) {
  if (ix_.source != nullptr) return ix_.source->SplitIds(split);
  return ReadSplitIds(*txn_, dbs_, split);
}

}  // namespace gulpdb::engine
