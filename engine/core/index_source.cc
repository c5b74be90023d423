// The defaults of IndexSource (index_source.h): what an index that has no
// faster way answers with the calls every index has.
#include "engine/core/index_source.h"

#include <algorithm>
#include <utility>

#include "engine/query/index_handles.h"
#include "engine/query/query_txn.h"
#include "gulpdb/error.h"
#include "index/query_keys.h"

namespace gulpdb::engine {

std::optional<index::VideoRecord> IndexSource::FindFrames(
    std::string_view id, const std::function<void(uint32_t chunk)>* chunk_known) const {
  std::optional<index::VideoRecord> record = FindVideo(id);
  if (!record) return std::nullopt;
  record->meta_data.clear();
  if (chunk_known != nullptr) (*chunk_known)(record->chunk);
  return record;
}

bool IndexSource::HasVideo(std::string_view id) const {
  return FindFrames(id, nullptr).has_value();
}

std::optional<uint32_t> IndexSource::FrameCount(std::string_view id) const {
  const std::optional<index::VideoRecord> record = FindFrames(id, nullptr);
  if (!record) return std::nullopt;
  return static_cast<uint32_t>(record->frames.size());
}

std::vector<std::string> IndexSource::OrderRange(uint64_t start, uint64_t count) const {
  std::vector<std::string> ids;
  const uint64_t total = OrderCount();
  const uint64_t end = start + std::min(count, total - std::min(start, total));
  ids.reserve(end - start);
  for (uint64_t position = start; position < end; ++position) {
    std::optional<std::string> id = OrderAt(position);
    if (!id) break;
    ids.push_back(std::move(*id));
  }
  return ids;
}

std::optional<std::string> IndexSource::OrderIdAt(std::string_view order_key) const {
  std::optional<std::string> out;
  const std::string to = std::string(order_key) + '\0';  // the next key strictly after it
  ScanOrder(order_key, to, [&](std::string_view key, std::string_view id) {
    if (key == order_key) out = std::string(id);
    return false;
  });
  return out;
}

std::vector<std::string> IndexSource::MetaLookup(std::string_view field,
                                                 std::string_view json_value) const {
  std::vector<std::string> ids;
  for (const auto& [name, value] : MetaFields()) {
    if (name != field) continue;
    const std::string prefix =
        index::MetaValuePrefix(value.number, value.form, MetaKeyValue(value.form, json_value));
    ScanMeta(prefix, {}, [&](std::string_view key, std::string_view id) {
      if (key.substr(0, prefix.size()) != prefix) return false;
      ids.emplace_back(id);
      return true;
    });
  }
  return ids;
}

void IndexSource::ScanChunksChecked(
    const std::function<bool(uint32_t chunk, const index::ChunkRecord&)>& fn,
    const Damaged&) const {
  ScanChunks(fn);
}

void IndexSource::ScanVideosChecked(
    std::string_view from, std::string_view to,
    const std::function<bool(std::string_view id, const index::VideoRecord&)>& fn,
    const Damaged&) const {
  ScanVideos(from, to, fn);
}

void IndexSource::CheckQueryData(const Damaged& problem) const {
  auto walk = [&](const char* what, const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      problem("index", std::string(what) + ": " + e.what());
    }
  };
  // Every meta index entry must be one its video's meta calls for (value,
  // chunk and sequence); as entry keys are unique, equal counts then mean
  // that none is missing. As CheckQueryDatabases does for an LMDB index.
  std::vector<MetaField> fields;
  walk("meta fields", [&] { fields = MakeMetaFields(MetaFields(), "index"); });
  uint64_t expected = 0;  // the entries the videos' meta calls for
  walk("videos' meta", [&] {
    ScanVideos({}, {}, [&](std::string_view id, const index::VideoRecord& record) {
      try {
        expected +=
            MetaEntryKeys(fields, id, record.meta_data, record.chunk, record.seq, "index").size();
      } catch (const Error& e) {
        problem("id '" + std::string(id) + "'", e.what());
      }
      return true;
    });
  });
  uint64_t valid = 0;
  walk("meta index", [&] {
    ScanMeta({}, {}, [&](std::string_view key, std::string_view id) {
      const std::optional<index::VideoRecord> record = FindVideo(id);
      bool ok = false;
      if (record) {
        try {
          const std::vector<std::string> keys =
              MetaEntryKeys(fields, id, record->meta_data, record->chunk, record->seq, "index");
          ok = std::find(keys.begin(), keys.end(), key) != keys.end();
        } catch (const Error&) {
          // reported with the video
        }
      }
      if (ok) {
        ++valid;
      } else {
        problem("meta index", "an entry of id '" + std::string(id) +
                                  "' matches no video's meta value, chunk and sequence");
      }
      return true;
    });
  });
  if (valid < expected) {
    problem("meta index",
            std::to_string(expected - valid) + " entries that videos' meta call for are missing");
  }
  walk("splits", [&] {
    for (const auto& [name, header] : SplitHeaders()) {
      for (const std::string& id : SplitIds(header.number)) {
        if (!HasVideo(id)) problem("split '" + name + "'", "lists id '" + id + "', not a video");
      }
    }
  });
}

DatasetStats SnapshotStats(const IndexSource& snapshot) {
  DatasetStats stats;
  const index::DatasetInfo& info = snapshot.info();
  stats.videos = snapshot.VideoCount();
  stats.format_version = info.format_version;
  stats.creator = info.creator;
  stats.frames = info.total_frames;
  stats.videos_per_chunk = info.videos_per_chunk;
  stats.bytes_per_chunk = info.bytes_per_chunk;
  stats.checksums = info.checksums;
  stats.uuid = info.uuid;
  stats.codec = static_cast<Codec>(info.codec);
  stats.committed_videos = info.next_seq;  // one sequence number per committed video
  // Every video of the dataset's own chunks was written under its checksums
  // setting; chunks merged in place kept their shard's (counted by Check).
  bool attached = false;
  uint64_t live_chunks = 0;
  snapshot.ScanChunks([&](uint32_t, const index::ChunkRecord& c) {
    ++stats.chunks;
    stats.committed_bytes += c.committed_length;
    stats.live_bytes += c.live_bytes;
    attached = attached || c.attached();
    if (c.live_videos != 0) ++live_chunks;
    return true;
  });
  if (!attached) {
    stats.unverified_videos = info.checksums ? 0 : stats.videos;
    stats.unverified_chunks = info.checksums ? 0 : live_chunks;
  }
  stats.garbage_bytes = stats.committed_bytes - stats.live_bytes;
  stats.index_bytes = snapshot.IndexBytes();
  return stats;
}

}  // namespace gulpdb::engine
