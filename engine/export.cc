// Writing .gmeta files that unmodified GulpIO2 reads (interop.h).
#include <fcntl.h>

#include "engine/dataset_impl.h"
#include "engine/file_util.h"
#include "engine/gmeta.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"

namespace gulpdb {
namespace {

void CopyFile(const std::string& from, const std::string& to) {
  engine::UniqueFd in = engine::OpenFile(from, O_RDONLY);
  const uint64_t size = engine::FileSize(in.get(), from);
  std::string bytes(size, '\0');
  if (engine::PreadFull(in.get(), bytes.data(), size, 0, from) != size) {
    throw IoError("copy " + from + ": the file shrank while being read");
  }
  engine::UniqueFd out = engine::OpenFile(to, O_WRONLY | O_CREAT | O_TRUNC);
  struct iovec iov = {bytes.data(), bytes.size()};
  engine::PwritevFull(out.get(), &iov, 1, 0, to);
  engine::DataSync(out.get(), to);
}

}  // namespace

ExportReport ExportGmeta(const Dataset& dataset, const std::string& out_dir_in) {
  const std::string out_dir = out_dir_in.empty() ? dataset.dir() : out_dir_in;
  if (!engine::IsDirectory(out_dir)) {
    throw NotFoundError("export " + dataset.dir() + ": no such directory " + out_dir);
  }
  // One read transaction is one snapshot: a writer may commit meanwhile
  // (in this process or another) without the export seeing half of it.
  const Dataset::Impl& impl = dataset.impl();
  ExportReport report;
  index::Txn txn = impl.env->BeginRead();
  std::vector<std::pair<uint32_t, index::ChunkRecord>> chunks;
  {
    index::Cursor cursor(txn, impl.chunks);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
      const uint32_t n = index::DecodeChunkKey(cursor.key());
      chunks.emplace_back(n, impl.DecodeChunkAt(cursor.key(), cursor.value()));
    }
  }
  for (const auto& [n, chunk] : chunks) {
    // Every chunk gets its .gmeta, an empty one ("{}") included: GulpIO2
    // pairs each data*.gulp with a meta*.gmeta and refuses a directory where
    // they differ in number (Writer::StartChunk leaves empty chunks, as
    // GulpIO2's writer does).
    const std::string name =
        chunk.meta_file.empty() ? "meta_" + std::to_string(n) + ".gmeta" : chunk.meta_file;
    const std::string path = out_dir + "/" + name;
    engine::GmetaWriter writer(path);
    index::Cursor cursor(txn, impl.order);
    const std::string end = index::OrderKey(n + 1, 0);
    for (bool ok = cursor.Seek(index::OrderKey(n, 0));
         ok && (n == UINT32_MAX || cursor.key() < end); ok = cursor.Next()) {
      const std::string_view id = cursor.value();
      const std::optional<index::VideoRecord> video = impl.FindRecord(txn, id);
      if (!video) {
        throw CorruptionError("export " + dataset.dir() + ": the order table lists id '" +
                              std::string(id) + "' that has no record");
      }
      writer.Add(id, video->frames, video->meta_data);
      ++report.videos;
    }
    writer.Commit();
    report.bytes_written += engine::FileSize(engine::OpenFile(path, O_RDONLY).get(), path);
    ++report.chunks;
  }
  const std::string labels = dataset.dir() + "/label2idx.json";
  if (out_dir != dataset.dir() && engine::PathExists(labels)) {
    CopyFile(labels, out_dir + "/label2idx.json");
  }
  return report;
}

}  // namespace gulpdb
