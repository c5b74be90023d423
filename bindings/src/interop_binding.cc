// import_gulpio / export_gmeta / check (gulpdb/interop.h).
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <string>

#include "bindings/src/bindings.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"

namespace gulpdb::python {

// The callable is captured as a borrowed pointer, so that copies of the
// std::function made by the engine (without the GIL) touch no reference
// count; the caller's argument keeps it alive for the whole call.
std::function<void(uint64_t, uint64_t)> Progress(const py::object& callback) {
  if (callback.is_none()) return {};
  PyObject* fn = callback.ptr();
  return [fn](uint64_t done, uint64_t total) {
    py::gil_scoped_acquire acquire;
    py::handle{fn}(done, total);
  };
}

namespace {

// keep_first and keep_last, import's own words before the one vocabulary,
// still work for a while, with a DeprecationWarning.
OnDuplicate ImportOnDuplicate(const std::string& text) {
  if (text == "keep_first" || text == "keep_last") {
    const std::string now = text == "keep_first" ? "skip" : "replace";
    const std::string message = "on_duplicate='" + text + "' is now spelled '" + now + "'";
    if (PyErr_WarnEx(PyExc_DeprecationWarning, message.c_str(), 2) != 0) {
      throw py::error_already_set();
    }
    return ToOnDuplicate(now);
  }
  return ToOnDuplicate(text);
}

py::dict ImportGulpioPy(const std::string& path, const std::string& index_dir,
                        const std::string& on_duplicate, bool skip_missing_meta, bool reindex,
                        bool discard_unexported, const py::object& progress,
                        const std::vector<std::string>& meta_index_keys) {
  ImportOptions options;
  options.reindex = reindex;
  options.discard_unexported = discard_unexported;
  options.meta_index_keys = meta_index_keys;
  options.on_duplicate = ImportOnDuplicate(on_duplicate);
  options.skip_missing_meta = skip_missing_meta;
  options.index_dir = index_dir;
  options.progress = Progress(progress);
  ImportReport report;
  try {
    py::gil_scoped_release release;
    report = ImportGulpio(path, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  py::dict out;
  out["chunks"] = report.chunks;
  out["videos"] = report.videos;
  out["frames"] = report.frames;
  out["gmeta_bytes"] = report.gmeta_bytes;
  out["warnings"] = report.warnings;
  out["splits"] = report.splits;
  return out;
}

py::dict ExportGmetaPy(const DatasetHandle& h, const std::string& out_dir) {
  auto ds = h.Get();
  ExportReport report;
  {
    py::gil_scoped_release release;
    report = ExportGmeta(*ds, out_dir);
  }
  py::dict out;
  out["chunks"] = report.chunks;
  out["videos"] = report.videos;
  out["bytes_written"] = report.bytes_written;
  out["splits"] = report.splits;
  return out;
}

py::dict ExportGulpioPy(const DatasetHandle& h, const std::string& out_dir, int quality,
                        const py::object& progress) {
  auto ds = h.Get();
  if (quality < 1 || quality > 100) {
    throw py::value_error("export " + ds->dir() + " to " + out_dir +
                          ": quality must be 1-100, not " + std::to_string(quality));
  }
  ExportOptions options;
  options.quality = quality;
  options.progress = Progress(progress);
  ExportReport report;
  try {
    py::gil_scoped_release release;
    report = ExportGulpioDirectory(*ds, out_dir, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  py::dict out;
  out["chunks"] = report.chunks;
  out["videos"] = report.videos;
  out["bytes_written"] = report.bytes_written;
  out["splits"] = report.splits;
  out["frames"] = report.frames;
  out["data_bytes"] = report.data_bytes;
  return out;
}

py::dict CheckPy(const std::string& path, bool deep, const py::object& progress) {
  CheckOptions options;
  options.deep = deep;
  options.progress = Progress(progress);
  CheckReport report;
  try {
    py::gil_scoped_release release;
    report = Check(path, options);
  } catch (const NotFoundError& e) {
    RaiseFileNotFound(e.what());
  }
  py::list problems;
  for (const CheckProblem& p : report.problems) problems.append(py::make_tuple(p.where, p.what));
  py::dict out;
  out["chunks"] = report.chunks;
  out["videos"] = report.videos;
  out["frames"] = report.frames;
  out["unverified_videos"] = report.unverified_videos;
  out["unverified_chunks"] = report.unverified_chunks;
  out["problems"] = problems;
  out["notes"] = report.notes;
  out["healthy"] = report.healthy();
  return out;
}

py::dict CheckVideoPy(const DatasetHandle& handle, const py::handle& id_object) {
  auto ds = handle.Get();
  const std::string id = ToId(id_object);
  VideoCheckReport report;
  {
    py::gil_scoped_release release;
    report = CheckVideo(*ds, id);
  }
  py::list frame_problems;
  for (const FrameProblem& p : report.frame_problems) {
    frame_problems.append(py::make_tuple(p.frame, p.what));
  }
  py::dict out;
  out["id"] = report.id;
  out["frames"] = report.frames;
  out["checksums"] = report.checksums;
  out["frame_problems"] = frame_problems;
  out["problems"] = report.problems;
  out["healthy"] = report.healthy();
  return out;
}

}  // namespace

void BindInterop(py::module_& m) {
  m.def("import_gulpio", &ImportGulpioPy, py::arg("path"), py::arg("index_dir") = "",
        py::arg("on_duplicate") = "error", py::arg("skip_missing_meta") = false,
        py::arg("reindex") = false, py::arg("discard_unexported") = false,
        py::arg("progress") = py::none(), py::arg("meta_index_keys") = std::vector<std::string>(),
        "Indexes a GulpIO directory in place (no .gulp byte changes); returns a report dict.");
  m.def("export_gmeta", &ExportGmetaPy, py::arg("dataset"), py::arg("out_dir") = "",
        "Writes meta_<N>.gmeta files that unmodified GulpIO2 reads; returns a report dict.");
  m.def("export_gulpio", &ExportGulpioPy, py::arg("dataset"), py::arg("out_dir"),
        py::arg("quality") = 90, py::arg("progress") = py::none(),
        "Makes out_dir a GulpIO directory of the dataset (gulpdb export DIR -o OUT).");
  m.def("check", &CheckPy, py::arg("path"), py::arg("deep") = false,
        py::arg("progress") = py::none(),
        "Checks a dataset; returns a report dict whose 'problems' lists (where, what).");
  m.def("check_video", &CheckVideoPy, py::arg("dataset"), py::arg("id"),
        "Checks one video's frames as check(deep=True) does; returns a report dict whose "
        "'frame_problems' lists (frame, what).");
  // The file-name rules of gulpdb/interop.h. A name may come as bytes
  // (os.fsencode) when it is not UTF-8.
  m.def("is_gulpio_data_file_name", &IsGulpioDataFileName, py::arg("name"),
        "True for a GulpIO data file name (data*.gulp).");
  m.def("is_gulpio_meta_file_name", &IsGulpioMetaFileName, py::arg("name"),
        "True for a GulpIO meta file name (meta*.gmeta).");
  m.def("gulpio_data_file_name", &GulpioDataFileName, py::arg("chunk"),
        "The name gulpdb gives chunk `chunk`'s data file: data_<N>.gulp.");
  m.def("gulpio_meta_file_name", &GulpioMetaFileName, py::arg("chunk"),
        "The name of chunk `chunk`'s exported .gmeta file: meta_<N>.gmeta.");
  m.def("index_directory", &IndexDirectory, py::arg("path"), py::arg("index_dir") = "",
        "Where the index of the dataset `path` lives: `index_dir`, or <path>/gulpdb.index.");
}

}  // namespace gulpdb::python
