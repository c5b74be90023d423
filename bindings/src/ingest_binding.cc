// The ingest library (gulpdb/ingest.h) and Merge (gulpdb/maintenance.h), for
// gulpdb.distributed: the driver lists sources, computes the label map and the
// shuffled order exactly as `gulpdb ingest` does, each task ingests one
// partition into its shard, and the driver attaches the shards with Merge.
//
// Options travel as a dict whose keys are IngestOptions' field names (an
// unknown key is a ValueError, so a misspelt option never passes silently);
// sources as dicts {"kind": "video"|"frames"|"image", "id", "id_json",
// "label" (str or None), "path", "frame_paths"}. The long calls (listing,
// ingest, merge) run without the GIL; callbacks take it for their call, and
// an exception raised by one stops the call and propagates.
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bindings/src/bindings.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"
#include "gulpdb/maintenance.h"

namespace gulpdb::python {
namespace {

using ingest::IngestOptions;
using ingest::SourceKind;
using ingest::SourceSpec;

OnDuplicate ParseOnDuplicate(const std::string& text) {
  if (text == "error") return OnDuplicate::kError;
  if (text == "skip") return OnDuplicate::kSkip;
  if (text == "replace") return OnDuplicate::kReplace;
  throw py::value_error("on_duplicate must be 'error', 'skip' or 'replace', not '" + text + "'");
}

std::chrono::milliseconds ToMilliseconds(double seconds, const char* what) {
  if (!(seconds >= 0) || seconds > 1e9) {
    throw py::value_error(std::string(what) + " must be 0..1e9 seconds");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

const char* KindName(SourceKind kind) {
  switch (kind) {
    case SourceKind::kVideo:
      return "video";
    case SourceKind::kFrameFolder:
      return "frames";
    case SourceKind::kImage:
      return "image";
  }
  return "video";
}

SourceKind ToKind(const std::string& name) {
  if (name == "video") return SourceKind::kVideo;
  if (name == "frames") return SourceKind::kFrameFolder;
  if (name == "image") return SourceKind::kImage;
  throw py::value_error("source kind must be 'video', 'frames' or 'image', not '" + name + "'");
}

py::dict SourceToDict(const SourceSpec& s) {
  py::dict d;
  d["kind"] = KindName(s.kind);
  d["id"] = s.id;
  d["id_json"] = s.id_json;
  d["label"] = s.label ? py::cast(*s.label) : py::none();
  d["path"] = s.path;
  d["frame_paths"] = s.frame_paths;
  return d;
}

std::vector<SourceSpec> ToSources(const py::handle& list) {
  std::vector<SourceSpec> out;
  for (const py::handle item : list) {
    const py::dict d = py::reinterpret_borrow<py::dict>(item);
    SourceSpec s;
    s.kind = ToKind(d.contains("kind") ? d["kind"].cast<std::string>() : "video");
    if (!d.contains("id")) throw py::value_error("a source has no 'id'");
    s.id = d["id"].cast<std::string>();
    if (d.contains("id_json")) s.id_json = d["id_json"].cast<std::string>();
    if (d.contains("label") && !d["label"].is_none()) s.label = d["label"].cast<std::string>();
    if (d.contains("path")) s.path = d["path"].cast<std::string>();
    if (d.contains("frame_paths"))
      s.frame_paths = d["frame_paths"].cast<std::vector<std::string>>();
    out.push_back(std::move(s));
  }
  return out;
}

// IngestOptions from a dict of field names (callbacks and sources apart).
IngestOptions ToOptions(const py::dict& d) {
  IngestOptions o;
  static const std::set<std::string> kKnown = {
      "dir",          "videos_dir",    "frames_dir",       "images_dir", "image_list",
      "labels",       "label_name",    "frame_rate",       "frame_size", "quality",
      "keep_jpeg",    "ffmpeg",        "num_workers",      "shuffle",    "seed",
      "batch",        "on_duplicate",  "videos_per_chunk", "strict",     "quiet",
      "lock_timeout", "catch_signals", "write_label_map"};
  for (const auto& item : d) {
    const std::string key = py::str(item.first);
    if (kKnown.count(key) == 0) throw py::value_error("unknown ingest option '" + key + "'");
  }
  const auto get = [&](const char* key, auto* field) {
    if (d.contains(key) && !d[key].is_none()) {
      *field = d[key].cast<std::remove_pointer_t<decltype(field)>>();
    }
  };
  get("dir", &o.dir);
  get("videos_dir", &o.videos_dir);
  get("frames_dir", &o.frames_dir);
  get("images_dir", &o.images_dir);
  get("image_list", &o.image_list);
  get("labels", &o.labels);
  get("label_name", &o.label_name);
  get("frame_rate", &o.frame_rate);
  get("frame_size", &o.frame_size);
  get("quality", &o.quality);
  get("keep_jpeg", &o.keep_jpeg);
  get("ffmpeg", &o.ffmpeg);
  get("num_workers", &o.num_workers);
  get("shuffle", &o.shuffle);
  get("batch", &o.batch);
  get("videos_per_chunk", &o.videos_per_chunk);
  get("strict", &o.strict);
  get("quiet", &o.quiet);
  get("catch_signals", &o.catch_signals);
  get("write_label_map", &o.write_label_map);
  if (d.contains("seed") && !d["seed"].is_none()) o.seed = d["seed"].cast<uint64_t>();
  if (d.contains("on_duplicate")) {
    o.on_duplicate = ParseOnDuplicate(d["on_duplicate"].cast<std::string>());
  }
  if (d.contains("lock_timeout")) {
    o.lock_timeout = ToMilliseconds(d["lock_timeout"].cast<double>(), "lock_timeout");
  }
  return o;
}

ingest::LabelMap ToLabelMap(const py::dict& d) {
  ingest::LabelMap map;
  for (const auto& item : d) map[item.first.cast<std::string>()] = item.second.cast<int64_t>();
  return map;
}

std::string Validate(const py::dict& options) {
  return ingest::ValidateIngestOptions(ToOptions(options));
}

py::list ListSourcesPy(const py::dict& options) {
  const IngestOptions o = ToOptions(options);
  std::vector<SourceSpec> sources;
  try {
    py::gil_scoped_release release;
    sources = ingest::ListSources(o);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  py::list out;
  for (const SourceSpec& s : sources) out.append(SourceToDict(s));
  return out;
}

ingest::LabelMap LabelMapPy(const std::string& dir, const py::list& sources) {
  const std::vector<SourceSpec> specs = ToSources(sources);
  py::gil_scoped_release release;
  return ingest::ComputeLabelMap(dir, specs);
}

void UpdateLabelMapFilePy(const std::string& dir, const py::dict& map) {
  const ingest::LabelMap m = ToLabelMap(map);
  py::gil_scoped_release release;
  ingest::UpdateLabelMapFile(dir, m);
}

// Runs Ingest without the GIL. The callables are held as borrowed pointers
// (the caller's arguments keep them alive), so that copies of the
// std::functions made without the GIL touch no reference count.
py::dict IngestPy(const py::dict& options, const py::object& sources, const py::object& label_map,
                  const py::object& on_progress, const py::object& on_problem,
                  const py::object& on_note) {
  IngestOptions o = ToOptions(options);
  if (!sources.is_none()) o.sources = ToSources(sources);
  if (!label_map.is_none()) o.label_map = ToLabelMap(label_map);
  if (!on_progress.is_none()) {
    PyObject* fn = on_progress.ptr();
    o.on_progress = [fn](const ingest::IngestProgress& p) {
      py::gil_scoped_acquire acquire;
      py::handle{fn}(p.done, p.total);
    };
  }
  if (!on_problem.is_none()) {
    PyObject* fn = on_problem.ptr();
    o.on_problem = [fn](const ingest::SourceProblem& p) {
      py::gil_scoped_acquire acquire;
      py::handle{fn}(p.id, p.path, p.message, p.skipped);
    };
  }
  if (!on_note.is_none()) {
    PyObject* fn = on_note.ptr();
    o.on_note = [fn](const std::string& note) {
      py::gil_scoped_acquire acquire;
      py::handle{fn}(note);
    };
  }
  ingest::IngestReport r;
  try {
    py::gil_scoped_release release;
    r = ingest::Ingest(o);
  } catch (const NotFoundError& e) {
    if (dynamic_cast<const IdNotFoundError*>(&e) != nullptr) throw;
    RaiseFileNotFound(e.what());
  }
  py::dict out;
  out["listed"] = r.listed;
  out["added"] = r.added;
  out["frames"] = r.frames;
  out["present"] = r.present;
  out["duplicates"] = r.duplicates;
  out["bad"] = r.bad;
  out["seed"] = r.seed;
  out["interrupted_by"] = r.interrupted_by;
  return out;
}

py::dict MergePy(const std::string& out, const std::vector<std::string>& shards,
                 const std::string& on_duplicate, double lock_timeout, const py::object& progress) {
  MergeOptions options;
  options.on_duplicate = ParseOnDuplicate(on_duplicate);
  options.lock_timeout = ToMilliseconds(lock_timeout, "lock_timeout");
  if (!progress.is_none()) {
    PyObject* fn = progress.ptr();
    options.progress = [fn](uint64_t done, uint64_t total) {
      py::gil_scoped_acquire acquire;
      py::handle{fn}(done, total);
    };
  }
  MergeReport r;
  try {
    py::gil_scoped_release release;
    r = Merge(out, shards, options);
  } catch (const NotFoundError& e) {
    if (dynamic_cast<const IdNotFoundError*>(&e) != nullptr) throw;
    RaiseFileNotFound(e.what());
  }
  py::dict d;
  d["shards"] = r.shards;
  d["chunks_attached"] = r.chunks_attached;
  d["videos_copied"] = r.videos_copied;
  d["videos"] = r.videos;
  d["skipped"] = r.skipped;
  return d;
}

}  // namespace

void BindIngest(py::module_& m) {
  m.def("ingest_validate", &Validate, py::arg("options"),
        "What is wrong with the ingest options (one line), or ''.");
  m.def("ingest_list_sources", &ListSourcesPy, py::arg("options"),
        "The sources a directory ingest with these options would read, in list order.");
  m.def("ingest_label_map", &LabelMapPy, py::arg("dir"), py::arg("sources"),
        "The label -> index map an ingest of `sources` into `dir` would use.");
  m.def("ingest_shuffled_order", &ingest::ShuffledOrder, py::arg("n"), py::arg("seed"),
        "The order in which ingest appends n listed sources when shuffled with `seed`.");
  m.def("ingest_update_label_map_file", &UpdateLabelMapFilePy, py::arg("dir"), py::arg("map"),
        "Makes <dir>/label2idx.json hold `map`, as ingest does.");
  m.def("ingest_run", &IngestPy, py::arg("options"), py::arg("sources") = py::none(),
        py::arg("label_map") = py::none(), py::arg("on_progress") = py::none(),
        py::arg("on_problem") = py::none(), py::arg("on_note") = py::none(),
        "Runs an ingest (gulpdb/ingest.h); returns its report as a dict.");
  m.def("merge", &MergePy, py::arg("out"), py::arg("shards"), py::arg("on_duplicate") = "error",
        py::arg("lock_timeout") = 0.0, py::arg("progress") = py::none(),
        "Adds shard datasets to `out`; shards inside it are attached in place. Returns a report.");
}

}  // namespace gulpdb::python
