// Versions on _gulpdb.NativeDataset (Dataset::Tag, Versions, DeleteTag,
// ReclaimVersions, VersionBytes, Diff; docs/versions.md). The Python layer
// (python/gulpdb/_versions.py) checks argument types and documents them.
#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <vector>

#include "bindings/src/bindings.h"
#include "gulpdb/dataset.h"

namespace gulpdb::python {
namespace {

py::dict VersionDict(const VersionInfo& v) {
  py::dict d;
  d["name"] = v.name;
  d["created"] = v.created;
  d["videos"] = v.videos;
  d["frames"] = v.frames;
  d["message"] = v.message.empty() ? py::object(py::none()) : py::object(py::str(v.message));
  d["root"] = v.root;
  return d;
}

}  // namespace

void BindVersions(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<DatasetHandle>>(m.attr("NativeDataset"));
  cls.def(
         "tag",
         [](const DatasetHandle& h, const std::string& name, const std::string& message) {
           auto ds = h.Get();
           VersionInfo info;
           {
             py::gil_scoped_release release;
             info = ds->Tag(name, message);
           }
           return VersionDict(info);
         },
         py::arg("name"), py::arg("message") = "")
      .def("versions",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             std::vector<VersionInfo> tags;
             {
               py::gil_scoped_release release;
               tags = ds->Versions();
             }
             py::list out;
             for (const VersionInfo& v : tags) out.append(VersionDict(v));
             return out;
           })
      .def(
          "delete_tag",
          [](const DatasetHandle& h, const std::string& name, int64_t grace_seconds) {
            auto ds = h.Get();
            py::gil_scoped_release release;
            ds->DeleteTag(name, std::chrono::seconds(grace_seconds));
          },
          py::arg("name"), py::arg("grace_seconds") = 600)
      .def("reclaim_versions",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             py::gil_scoped_release release;
             return ds->ReclaimVersions();
           })
      .def("version_bytes",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             py::gil_scoped_release release;
             return ds->VersionBytes();
           })
      .def(
          "diff",
          [](const DatasetHandle& h, const std::string& a, const std::string& b) {
            auto ds = h.Get();
            VersionDiff d;
            {
              py::gil_scoped_release release;
              d = ds->Diff(a, b);
            }
            py::dict out;
            out["added"] = d.added;
            out["removed"] = d.removed;
            out["meta_changed"] = d.meta_changed;
            out["frames_changed"] = d.frames_changed;
            return out;
          },
          py::arg("a"), py::arg("b"));
}

}  // namespace gulpdb::python
