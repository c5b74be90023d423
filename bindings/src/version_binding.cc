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

using pybind11::literals::operator""_a;

py::dict VersionDict(const VersionInfo& v) {
  return py::dict(
      "name"_a = v.name, "created"_a = v.created, "videos"_a = v.videos, "frames"_a = v.frames,
      "message"_a = v.message.empty() ? py::object(py::none()) : py::object(py::str(v.message)),
      "root"_a = v.root);
}

}  // namespace

void BindVersions(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<DatasetHandle>>(m.attr("NativeDataset"));
  cls.def(
         "tag",
         [](const DatasetHandle& h, const std::string& name, const std::string& message) {
           auto ds = h.Get();
           return VersionDict(WithoutGil([&] { return ds->Tag(name, message); }));
         },
         py::arg("name"), py::arg("message") = "")
      .def("versions",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             py::list out;
             for (const VersionInfo& v : WithoutGil([&] { return ds->Versions(); })) {
               out.append(VersionDict(v));
             }
             return out;
           })
      .def(
          "delete_tag",
          [](const DatasetHandle& h, const std::string& name, int64_t grace_seconds) {
            auto ds = h.Get();
            WithoutGil([&] { ds->DeleteTag(name, std::chrono::seconds(grace_seconds)); });
          },
          py::arg("name"), py::arg("grace_seconds") = 600)
      .def("reclaim_versions",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             return WithoutGil([&] { return ds->ReclaimVersions(); });
           })
      .def("version_bytes",
           [](const DatasetHandle& h) {
             auto ds = h.Get();
             return WithoutGil([&] { return ds->VersionBytes(); });
           })
      .def(
          "diff",
          [](const DatasetHandle& h, const std::string& a, const std::string& b) {
            auto ds = h.Get();
            const VersionDiff d = WithoutGil([&] { return ds->Diff(a, b); });
            return py::dict("added"_a = d.added, "removed"_a = d.removed,
                            "meta_changed"_a = d.meta_changed,
                            "frames_changed"_a = d.frames_changed);
          },
          py::arg("a"), py::arg("b"));
}

}  // namespace gulpdb::python
