// _gulpdb.DecodeOptions: how a read decodes its frames (gulpdb/jpeg.h
// DecodeOptions), checked once when it is made rather than on every read.
// gulpdb.Dataset.read/read_batch, the GulpIO API and the PyTorch datasets
// all take one; their keyword arguments (colorspace=, size=, ...) become one
// in python/gulpdb/_decode.py.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

#include "bindings/src/bindings.h"

namespace gulpdb::python {
namespace {

const char* ColorspaceName(PixelFormat format) {
  switch (format) {
    case PixelFormat::kAuto:
      return "auto";
    case PixelFormat::kRGB:
      return "rgb";
    case PixelFormat::kBGR:
      return "bgr";
    case PixelFormat::kGray:
      return "gray";
  }
  return "rgb";
}

const char* ResizeName(ResizeMode mode) {
  switch (mode) {
    case ResizeMode::kShortEdge:
      return "short_edge";
    case ResizeMode::kFit:
      return "fit";
    case ResizeMode::kStretch:
      return "stretch";
  }
  return "short_edge";
}

py::object SizeOf(const PyDecodeOptions& o) {
  if (o.options.out_height == 0) return py::none();
  return py::make_tuple(o.options.out_height, o.options.out_width);
}

py::object CropOf(const PyDecodeOptions& o) {
  if (!o.crop) return py::none();
  return py::str(*o.crop);
}

// The keyword arguments that make `o` again (what pickling keeps).
py::dict AsDict(const PyDecodeOptions& o) {
  py::dict d;
  d["colorspace"] = ColorspaceName(o.options.format);
  d["dct"] = o.options.dct == DctMethod::kFast ? "fast" : "accurate";
  d["downscale"] = o.options.scale_denom;
  d["lenient"] = o.options.lenient;
  d["size"] = SizeOf(o);
  d["resize"] = ResizeName(o.options.resize);
  d["crop"] = CropOf(o);
  return d;
}

PyDecodeOptions FromDict(const py::dict& d) {
  return MakeDecodeOptions(d["colorspace"].cast<std::string>(), d["dct"].cast<std::string>(),
                           d["downscale"].cast<int>(), d["lenient"].cast<bool>(), d["size"],
                           d["resize"], d["crop"]);
}

}  // namespace

PyDecodeOptions MakeDecodeOptions(const std::string& colorspace, const std::string& dct,
                                  int downscale, bool lenient, const py::handle& size,
                                  const py::handle& resize, const py::handle& crop) {
  PyDecodeOptions out;
  out.options = ToDecodeOptions(colorspace, dct, downscale, lenient);
  ApplyOutputSize(size, resize, crop, &out.options);
  // ApplyOutputSize accepted `crop`: None, or "center" / "random" in any case
  // (and "random" only with a size).
  if (!crop.is_none()) out.crop = out.options.crop == CropMode::kRandom ? "random" : "center";
  return out;
}

void BindDecodeOptions(py::module_& m) {
  py::class_<PyDecodeOptions>(
      m, "DecodeOptions",
      "How a read decodes frames; checked when made (TypeError, ValueError), then reused by "
      "every read. See gulpdb.DecodeOptions.")
      .def(py::init(&MakeDecodeOptions), py::kw_only(), py::arg("colorspace") = "rgb",
           py::arg("dct") = "fast", py::arg("downscale") = 1, py::arg("lenient") = false,
           py::arg("size") = py::none(), py::arg("resize") = "short_edge",
           py::arg("crop") = "center")
      .def_property_readonly(
          "colorspace", [](const PyDecodeOptions& o) { return ColorspaceName(o.options.format); },
          "'auto', 'rgb', 'bgr' or 'gray'.")
      .def_property_readonly(
          "dct",
          [](const PyDecodeOptions& o) {
            return o.options.dct == DctMethod::kFast ? "fast" : "accurate";
          },
          "'fast' or 'accurate'.")
      .def_property_readonly(
          "downscale", [](const PyDecodeOptions& o) { return o.options.scale_denom; },
          "1, 2, 4 or 8.")
      .def_property_readonly(
          "lenient", [](const PyDecodeOptions& o) { return o.options.lenient; },
          "Accept JPEGs that libjpeg only warns about.")
      .def_property_readonly("size", &SizeOf, "(height, width), or None.")
      .def_property_readonly(
          "resize", [](const PyDecodeOptions& o) { return ResizeName(o.options.resize); },
          "'short_edge', 'fit' or 'stretch'.")
      .def_property_readonly("crop", &CropOf, "'center', 'random' or None.")
      .def("as_dict", &AsDict, "The keyword arguments that make these options.")
      .def(
          "replace",
          [](const PyDecodeOptions& o, const py::kwargs& changes) {
            py::dict d = AsDict(o);
            for (const auto& item : changes) {
              if (!d.contains(item.first)) {
                throw py::type_error("DecodeOptions has no option " +
                                     py::repr(item.first).cast<std::string>());
              }
              d[item.first] = item.second;
            }
            return FromDict(d);
          },
          "A copy with some options changed (checked as the constructor checks them).")
      .def("__eq__",
           [](const PyDecodeOptions& a, const py::object& b) -> py::object {
             if (!py::isinstance<PyDecodeOptions>(b))
               return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(AsDict(a).equal(AsDict(b.cast<const PyDecodeOptions&>())));
           })
      .def("__hash__",
           [](const PyDecodeOptions& o) {
             return py::hash(py::tuple(py::list(AsDict(o).attr("values")())));
           })
      .def("__repr__",
           [](const PyDecodeOptions& o) {
             std::string out = "DecodeOptions(";
             bool first = true;
             for (const auto& item : AsDict(o)) {
               if (!first) out += ", ";
               first = false;
               out += py::str(item.first).cast<std::string>() + "=" +
                      py::repr(item.second).cast<std::string>();
             }
             return out + ")";
           })
      .def(py::pickle([](const PyDecodeOptions& o) { return AsDict(o); },
                      [](const py::dict& d) { return FromDict(d); }));
}

}  // namespace gulpdb::python
