// Remote datasets (gulpdb/remote.h): push, publish_snapshot, remote_info and
// the cache folder. Opening an "s3://" URL is NativeDataset.open's job.
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "bindings/src/bindings.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "util/url_text.h"

namespace gulpdb::python {
namespace {

// A grace period: None (the default), a number of seconds, or a duration
// text such as "24h".
std::optional<std::chrono::seconds> ToGrace(const py::object& grace) {
  if (grace.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(grace)) return ParseDuration(grace.cast<std::string>());
  if (py::isinstance<py::bool_>(grace) ||
      !(py::isinstance<py::int_>(grace) || py::isinstance<py::float_>(grace))) {
    throw py::type_error("grace must be None, a number of seconds or a duration such as '24h'");
  }
  const double seconds = grace.cast<double>();
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw py::value_error("grace must be a number of seconds >= 0");
  }
  return std::chrono::seconds(static_cast<int64_t>(std::llround(seconds)));
}

py::dict ReportDict(const PushReport& r) {
  py::dict out;
  out["published"] = r.published;
  out["generation"] = r.generation;
  out["chunks"] = r.chunks;
  out["chunks_uploaded"] = r.chunks_uploaded;
  out["bytes_uploaded"] = r.bytes_uploaded;
  out["gmeta_uploaded"] = r.gmeta_uploaded;
  out["snapshot_uploaded"] = r.snapshot_uploaded;
  out["snapshot_bytes"] = r.snapshot_bytes;
  out["partitioned"] = r.partitioned;
  out["partitions"] = r.partitions;
  out["partitions_uploaded"] = r.partitions_uploaded;
  out["partition_bytes_uploaded"] = r.partition_bytes_uploaded;
  out["chunk_pages_uploaded"] = r.chunk_pages_uploaded;
  out["root_pages"] = r.root_pages;
  out["root_pages_uploaded"] = r.root_pages_uploaded;
  out["root_bytes"] = r.root_bytes;
  out["objects_obsoleted"] = r.objects_obsoleted;
  out["objects_deleted"] = r.objects_deleted;
  out["foreign_objects_replaced"] = r.foreign_objects_replaced;
  out["objects_repaired"] = r.objects_repaired;
  out["foreign_objects_deleted"] = r.foreign_objects_deleted;
  out["seconds"] = r.seconds;
  return out;
}

IndexLayout LayoutOf(const std::string& operation, const std::string& layout) {
  const std::optional<IndexLayout> parsed = IndexLayoutFromName(layout);
  if (!parsed) {
    throw py::value_error(operation + ": layout must be 'auto', 'partitioned' or 'whole', not '" +
                          layout + "'");
  }
  return *parsed;
}

py::dict PushPy(const std::string& path, const std::string& url, uint32_t jobs,
                const py::object& grace, const py::object& progress, const std::string& index_dir,
                bool overwrite, bool allow_unconditional_writes, const std::string& layout,
                uint64_t partition_bytes) {
  PushOptions options;
  options.layout = LayoutOf("push " + path, layout);
  options.partition_bytes = partition_bytes;
  options.index_dir = index_dir;
  options.overwrite = overwrite;
  options.allow_unconditional_writes = allow_unconditional_writes;
  if (jobs == 0) throw py::value_error("jobs must be at least 1");
  options.jobs = jobs;
  options.grace = ToGrace(grace);
  options.progress = Progress(progress);
  PushReport report;
  try {
    py::gil_scoped_release release;
    report = Push(path, url, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  return ReportDict(report);
}

py::dict PublishSnapshotPy(const std::string& path, const py::object& grace,
                           const std::string& layout) {
  PushOptions options;
  options.grace = ToGrace(grace);
  options.layout = LayoutOf("snapshot " + path, layout);
  PushReport report;
  try {
    py::gil_scoped_release release;
    report = PublishSnapshot(path, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  return ReportDict(report);
}

py::object RemoteInfoPy(const DatasetHandle& h) {
  auto ds = h.Get();
  const std::optional<RemoteInfo> info = GetRemoteInfo(*ds);
  if (!info) return py::none();
  py::dict out;
  out["url"] = info->url;
  out["generation"] = info->generation;
  out["created"] = info->created;
  out["snapshot_sha256"] = info->snapshot_sha256;
  out["dataset"] = info->dataset_uuid;
  out["snapshot_bytes"] = info->snapshot_bytes;
  out["snapshot_downloaded"] = info->snapshot_downloaded;
  out["snapshot_path"] = info->snapshot_path;
  out["requests"] = info->requests;
  out["bytes_received"] = info->bytes_received;
  out["partitioned"] = info->partitioned;
  out["splits_omitted"] = info->splits_omitted;
  out["partitions_downloaded"] = info->partitions_downloaded;
  out["prefetch_gets"] = info->prefetch_gets;
  out["prefetch_bytes"] = info->prefetch_bytes;
  out["prefetch_peak_bytes"] = info->prefetch_peak_bytes;
  out["prefetch_fills"] = info->prefetch_fills;
  out["prefetch_peak_fills"] = info->prefetch_peak_fills;
  return std::move(out);
}

py::dict FrameCacheStatsPy() {
  FrameCacheStats s;
  {
    py::gil_scoped_release release;
    s = GetFrameCacheStats();
  }
  py::dict out;
  out["dir"] = s.dir;
  out["enabled"] = s.enabled;
  out["bound"] = s.bound;
  out["block_bytes"] = s.block_bytes;
  out["hits"] = s.hits;
  out["misses"] = s.misses;
  out["prefetched"] = s.prefetched;
  out["bytes_from_store"] = s.bytes_from_store;
  out["bytes_from_cache"] = s.bytes_from_cache;
  out["evictions"] = s.evictions;
  out["bytes_evicted"] = s.bytes_evicted;
  out["damaged"] = s.damaged;
  out["refetched"] = s.refetched;
  out["bytes"] = s.bytes;
  return out;
}

}  // namespace

void BindRemote(py::module_& m) {
  m.def("frame_cache_stats", &FrameCacheStatsPy,
        "The node-wide counters of the frame cache (a dict; docs/frame_cache.md).");
  m.def("push", &PushPy, py::arg("path"), py::arg("url"), py::arg("jobs") = 4,
        py::arg("grace") = py::none(), py::arg("progress") = py::none(), py::arg("index_dir") = "",
        py::arg("overwrite") = false, py::arg("allow_unconditional_writes") = false,
        py::arg("layout") = "auto", py::arg("partition_bytes") = 0,
        "Publishes a local dataset (or its changes) to s3://bucket/prefix; returns a report.");
  m.def("publish_snapshot", &PublishSnapshotPy, py::arg("path"), py::arg("grace") = py::none(),
        py::arg("layout") = "auto",
        "Publishes a snapshot of the index beside the dataset (gulpdb snapshot).");
  m.def("remote_info", &RemoteInfoPy, py::arg("dataset"),
        "What a dataset opened from a manifest was opened from (a dict), or None.");
  m.def("cache_directory", &CacheDirectory, "The local cache folder (GULPDB_CACHE).");
  m.def(
      "is_remote_url", [](const std::string& path) { return IsRemoteUrl(path); }, py::arg("path"),
      "True for an s3:// URL.");
  m.def(
      "s3_url_typo", [](const std::string& text) { return util::S3UrlTypo(text); }, py::arg("text"),
      "For text that looks like a mistyped s3:// URL (S3://, s3:/, s3a://), what is wrong and "
      "the URL meant; '' otherwise.");
  m.def(
      "redact_url", [](const std::string& url) { return util::RedactUrl(url); }, py::arg("url"),
      "The URL with its user information (user:secret@) replaced by ***: what messages show.");
}

}  // namespace gulpdb::python
