// The ingest library (gulpdb/ingest.h) and Merge (gulpdb/maintenance.h), for
// gulpdb.distributed: the driver lists sources, computes the label map and the
// shuffled order exactly as `gulpdb ingest` does, each task ingests one
// partition into its shard, and the driver attaches the shards with Merge.
//
// Options travel as a dict whose keys are the names of the ingest option
// table (IngestCommandOptions, '_' for '-': "frame_rate", "no_checksums"),
// plus "dir", "lock_timeout", "catch_signals" and "write_label_map"; every
// table option is read by SetIngestOption from its text (str() of a number,
// "true"/"false" of a bool), so Python and the command line share one set of
// rules, and an unknown key is a ValueError (a misspelt option never passes
// silently). Sources travel as dicts {"kind": "video"|"frames"|"image",
// "id", "id_json", "label" (str or None), "path", "frame_paths"}; paths
// that are not UTF-8 cross as str with surrogate escapes (os.fsdecode's
// form), and a source no dataset can hold (an id or label that is not
// UTF-8) as {"kind", "id" (printable), "path", "problem"} — the message
// Ingest would report; a video ListSources could not find carries
// "lookup_error" (the message) and "lookup_error_code" (ErrorCode as an
// int), which its ingest reports. The long calls (listing, ingest, merge) run without
// the GIL; callbacks take it for their call, and an exception raised by one
// stops the call and propagates.
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

std::chrono::milliseconds ToMilliseconds(double seconds, const char* what) {
  if (!(seconds >= 0) || seconds > 1e9) {
    throw py::value_error(std::string(what) + " must be 0..1e9 seconds");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// "frame-rate" -> "frame_rate": the Python name of an option.
std::string Underscored(std::string name) {
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
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

// A file path from C++: str, with surrogate escapes for bytes that are not UTF-8.
py::str PathToPy(const std::string& path) {
  PyObject* text =
      PyUnicode_DecodeUTF8(path.data(), static_cast<Py_ssize_t>(path.size()), "surrogateescape");
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

// The text SetIngestOption reads for a Python value: "true"/"false" for a
// bool, a str as it is (surrogate escapes back to their bytes), bytes as
// they are, a path-like object as os.fspath gives it, anything else as str().
std::string TextOf(const py::handle& value) {
  if (PyBool_Check(value.ptr()) ||
      py::isinstance(value, py::module_::import("numpy").attr("bool_"))) {
    return value.cast<bool>() ? "true" : "false";
  }
  if (py::isinstance<py::bytes>(value)) return value.cast<std::string>();
  if (py::isinstance<py::str>(value)) {
    PyObject* bytes = PyUnicode_AsEncodedString(value.ptr(), "utf-8", "surrogateescape");
    if (bytes == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::bytes>(bytes).cast<std::string>();
  }
  if (PyObject_HasAttrString(value.ptr(), "__fspath__") != 0) {
    return TextOf(py::module_::import("os").attr("fspath")(value));
  }
  if (PyFloat_Check(value.ptr())) return py::repr(value).cast<std::string>();
  return py::str(value).cast<std::string>();
}

py::dict SourceToDict(const SourceSpec& s) {
  py::dict d;
  d["kind"] = KindName(s.kind);
  if (const std::optional<ingest::SourceProblem> problem = ingest::UnstorableSource(s)) {
    d["id"] = problem->id;
    d["path"] = PathToPy(s.path);
    d["problem"] = problem->message;
    return d;
  }
  d["id"] = s.id;
  d["id_json"] = s.id_json;
  d["label"] = s.label ? py::cast(*s.label) : py::none();
  d["path"] = PathToPy(s.path);
  if (!s.lookup_error.empty()) {
    d["lookup_error"] = s.lookup_error;
    d["lookup_error_code"] = static_cast<int>(s.lookup_error_code);
  }
  py::list frames;
  for (const std::string& f : s.frame_paths) frames.append(PathToPy(f));
  d["frame_paths"] = frames;
  return d;
}

std::vector<SourceSpec> ToSources(const py::handle& list) {
  std::vector<SourceSpec> out;
  for (const py::handle item : list) {
    const py::dict d = py::reinterpret_borrow<py::dict>(item);
    SourceSpec s;
    s.kind = ToKind(d.contains("kind") ? d["kind"].cast<std::string>() : "video");
    if (!d.contains("id")) throw py::value_error("a source has no 'id'");
    if (d.contains("problem")) {
      throw py::value_error("source '" + d["id"].cast<std::string>() +
                            "' cannot be stored: " + d["problem"].cast<std::string>());
    }
    s.id = d["id"].cast<std::string>();
    if (d.contains("id_json")) s.id_json = d["id_json"].cast<std::string>();
    if (d.contains("label") && !d["label"].is_none()) s.label = d["label"].cast<std::string>();
    if (d.contains("path")) s.path = TextOf(d["path"]);
    if (d.contains("lookup_error")) {
      s.lookup_error = TextOf(d["lookup_error"]);
      py::object given = py::int_(0);  // (not a ?: whose int_ branch would convert "3")
      if (d.contains("lookup_error_code")) given = d["lookup_error_code"];
      const int code =
          py::isinstance<py::int_>(given) && !PyBool_Check(given.ptr()) ? given.cast<int>() : -1;
      if (code < 0 || code > static_cast<int>(ErrorCode::kResourceExhausted)) {
        throw py::value_error("source '" + s.id + "': lookup_error_code must be an ErrorCode " +
                              "(0-" +
                              std::to_string(static_cast<int>(ErrorCode::kResourceExhausted)) +
                              "), not " + py::repr(given).cast<std::string>());
      }
      s.lookup_error_code = static_cast<ErrorCode>(code);
    }
    if (d.contains("frame_paths")) {
      for (const py::handle f : d["frame_paths"]) s.frame_paths.push_back(TextOf(f));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// IngestOptions from a dict (see the file comment; callbacks and sources apart).
IngestOptions ToOptions(const py::dict& d) {
  IngestOptions o;
  for (const auto& item : d) {
    const std::string key = py::str(item.first);
    const py::handle value = item.second;
    if (key == "dir") {
      if (!value.is_none()) o.dir = TextOf(value);
    } else if (key == "lock_timeout") {
      o.lock_timeout = ToMilliseconds(value.cast<double>(), "lock_timeout");
    } else if (key == "catch_signals") {
      o.catch_signals = value.cast<bool>();
    } else if (key == "write_label_map") {
      o.write_label_map = value.cast<bool>();
    } else if (!value.is_none()) {
      bool known = false;
      for (const ingest::IngestOptionInfo& info : ingest::IngestCommandOptions()) {
        known = known || Underscored(info.name) == key;
      }
      if (!known) throw py::value_error("unknown ingest option '" + key + "'");
      ingest::SetIngestOption(&o, key, TextOf(value));
    }
  }
  return o;
}

// Every table option of `o` as a Python value of its kind (None when unset).
py::dict OptionsToDict(const IngestOptions& o) {
  py::dict d;
  for (const ingest::IngestOptionInfo& info : ingest::IngestCommandOptions()) {
    const std::optional<std::string> text = ingest::IngestOptionText(o, info.name);
    py::object value = py::none();
    if (text) {
      switch (info.kind) {
        case ingest::OptionKind::kSwitch:
          value = py::bool_(*text == "true");
          break;
        case ingest::OptionKind::kWholeNumber:
          value = py::int_(py::str(*text));
          break;
        case ingest::OptionKind::kNumber:
          value = py::float_(std::stod(*text));
          break;
        case ingest::OptionKind::kPath:
          value = PathToPy(*text);
          break;
        case ingest::OptionKind::kText:
        case ingest::OptionKind::kChoice:
          value = py::str(*text);
          break;
      }
    }
    d[py::str(Underscored(info.name))] = value;
  }
  return d;
}

const char* KindText(ingest::OptionKind kind) {
  switch (kind) {
    case ingest::OptionKind::kPath:
      return "path";
    case ingest::OptionKind::kText:
      return "text";
    case ingest::OptionKind::kWholeNumber:
      return "whole_number";
    case ingest::OptionKind::kNumber:
      return "number";
    case ingest::OptionKind::kSwitch:
      return "switch";
    case ingest::OptionKind::kChoice:
      return "choice";
  }
  return "text";
}

py::list CommandOptionsPy() {
  py::list out;
  for (const ingest::IngestOptionInfo& info : ingest::IngestCommandOptions()) {
    py::dict d;
    d["name"] = info.name;
    d["short_name"] = info.short_name != 0 ? py::object(py::str(std::string(1, info.short_name)))
                                           : py::object(py::none());
    d["kind"] = KindText(info.kind);
    d["value_name"] = info.value_name;
    d["default"] = info.default_text;
    d["help"] = info.help;
    d["distributed"] = info.distributed;
    out.append(d);
  }
  return out;
}

// The options `given` (a dict of table names; None values left out) over the
// defaults, each read by the table's rules: the whole set as Python values.
py::dict OptionsPy(const py::dict& given) {
  IngestOptions o;
  for (const auto& item : given) {
    if (item.second.is_none()) continue;
    ingest::SetIngestOption(&o, py::str(item.first).cast<std::string>(), TextOf(item.second));
  }
  return OptionsToDict(o);
}

std::vector<std::string> WarningsPy(const py::dict& options,
                                    const std::vector<std::string>& given) {
  const IngestOptions o = ToOptions(options);
  py::gil_scoped_release release;
  return ingest::IgnoredIngestOptions(o, given);
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

// The ids of source dicts, kept alive by `storage`.
std::vector<std::string_view> IdsOf(const py::list& sources, std::vector<std::string>* storage) {
  storage->clear();
  storage->reserve(sources.size());
  for (const py::handle item : sources) {
    const py::dict d = py::reinterpret_borrow<py::dict>(item);
    if (!d.contains("id")) throw py::value_error("a source has no 'id'");
    storage->push_back(d["id"].cast<std::string>());
  }
  return std::vector<std::string_view>(storage->begin(), storage->end());
}

// ingest::PlanSources over source dicts (a "problem" key: UnstorableSource's
// message, as ingest_list_sources gives it).
py::dict PlanSourcesPy(const std::string& dir, const std::string& on_duplicate, bool strict,
                       const py::list& sources) {
  std::vector<std::string> storage;
  const std::vector<std::string_view> ids = IdsOf(sources, &storage);
  std::vector<std::optional<ingest::SourceProblem>> problems(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const py::dict d = py::reinterpret_borrow<py::dict>(sources[i]);
    if (!d.contains("problem")) continue;
    problems[i] = ingest::SourceProblem{storage[i], d.contains("path") ? TextOf(d["path"]) : "",
                                        d["problem"].cast<std::string>(), /*skipped=*/true};
  }
  ingest::SourcePlan plan;
  {
    py::gil_scoped_release release;
    plan = ingest::PlanSources(dir, ToOnDuplicate(on_duplicate), strict, ids, problems);
  }
  py::dict out;
  py::list keep;
  for (const bool k : plan.keep) keep.append(py::bool_(k));
  out["keep"] = keep;
  out["duplicates"] = plan.duplicates;
  out["bad"] = py::cast(plan.bad);
  return out;
}

// ingest::DropIdsPresent: (keep, how many were dropped).
py::tuple DropIdsPresentPy(const DatasetHandle& h, const std::string& dir,
                           const std::string& on_duplicate, const py::list& sources,
                           std::vector<bool> keep) {
  const OnDuplicate mode = ToOnDuplicate(on_duplicate);
  std::vector<std::string> storage;
  const std::vector<std::string_view> ids = IdsOf(sources, &storage);
  const std::shared_ptr<Dataset> ds = h.Get();
  uint64_t present = 0;
  {
    py::gil_scoped_release release;
    present = ingest::DropIdsPresent(*ds, dir, mode, ids, &keep);
  }
  return py::make_tuple(py::cast(keep), present);
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
      py::handle{fn}(p.id, PathToPy(p.path), p.message, p.skipped);
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
  options.on_duplicate = ToOnDuplicate(on_duplicate);
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

py::dict RelabelPy(const std::string& dir, const std::string& labels, const std::string& label_name,
                   const std::string& index_dir, double lock_timeout) {
  ingest::RelabelOptions options;
  options.dir = dir;
  options.labels = labels;
  options.label_name = label_name;
  options.index_dir = index_dir;
  options.lock_timeout = ToMilliseconds(lock_timeout, "lock_timeout");
  std::vector<std::string> warnings;
  options.on_warning = [&warnings](const std::string& w) { warnings.push_back(w); };
  ingest::RelabelReport r;
  try {
    py::gil_scoped_release release;
    r = ingest::Relabel(options);
  } catch (const NotFoundError& e) {
    if (dynamic_cast<const IdNotFoundError*>(&e) != nullptr) throw;
    RaiseFileNotFound(e.what());
  }
  py::dict d;
  d["listed"] = r.listed;
  d["changed"] = r.changed;
  d["new_labels"] = r.new_labels;
  d["warnings"] = warnings;
  return d;
}

}  // namespace

void BindIngest(py::module_& m) {
  m.def("relabel", &RelabelPy, py::arg("dir"), py::arg("labels"), py::arg("label_name") = "label",
        py::arg("index_dir") = "", py::arg("lock_timeout") = 0.0,
        "Gives the videos of a label list their labels (gulpdb relabel); returns a report.");
  m.def("ingest_validate", &Validate, py::arg("options"),
        "What is wrong with the ingest options (one line), or ''.");
  m.def("ingest_command_options", &CommandOptionsPy,
        "The ingest option table: dicts of name, short_name, kind, value_name, default, help, "
        "distributed.");
  m.def("ingest_options", &OptionsPy, py::arg("given"),
        "Every ingest option: the defaults with `given` (table names, '_' for '-') read by the "
        "command line's rules; ValueError for a bad value.");
  m.def("ingest_warnings", &WarningsPy, py::arg("options"), py::arg("given"),
        "The warnings for options in `given` that an ingest with `options` would not use.");
  m.def("ingest_list_sources", &ListSourcesPy, py::arg("options"),
        "The sources a directory ingest with these options would read, in list order.");
  m.def("ingest_label_map", &LabelMapPy, py::arg("dir"), py::arg("sources"),
        "The label -> index map an ingest of `sources` into `dir` would use.");
  m.def("ingest_plan_sources", &PlanSourcesPy, py::arg("dir"), py::arg("on_duplicate"),
        py::arg("strict"), py::arg("sources"),
        "Which of `sources` (source dicts in ingest order) an ingest into `dir` keeps: "
        "{'keep': [bool], 'duplicates': int, 'bad': [index]}; ValueError as ingest raises it.");
  m.def("ingest_drop_present", &DropIdsPresentPy, py::arg("dataset"), py::arg("dir"),
        py::arg("on_duplicate"), py::arg("sources"), py::arg("keep"),
        "(keep, dropped): `keep` without the sources whose id the dataset holds (on_duplicate "
        "'skip'); ValueError for one under 'error'; 'replace' keeps them.");
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
