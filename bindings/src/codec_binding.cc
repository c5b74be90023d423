// encode_jpeg / decode_jpeg: gulpdb's JPEG codec (gulpdb/jpeg.h) on single
// images, for adapters, custom pipelines and tests.
#include <cstdint>
#include <string>
#include <string_view>

#include "bindings/src/bindings.h"

namespace gulpdb::python {
namespace {

// The bytes of a bytes-like object. A `bytes` object is used in place (it is
// immutable and the caller holds a reference); other buffers are copied into
// `*copy`, since another thread could change them while the GIL is released.
std::string_view JpegBytes(const py::handle& data, std::string* copy) {
  if (py::isinstance<py::bytes>(data)) {
    char* p = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(data.ptr(), &p, &size) != 0) throw py::error_already_set();
    return std::string_view(p, static_cast<size_t>(size));
  }
  if (!PyObject_CheckBuffer(data.ptr()) || py::isinstance<py::str>(data)) {
    throw py::type_error(std::string("JPEG data must be bytes-like, not ") +
                         Py_TYPE(data.ptr())->tp_name);
  }
  *copy = CopyBuffer(data);
  return *copy;
}

py::array DecodeJpeg(const py::handle& data, const std::string& colorspace, const std::string& dct,
                     int downscale, bool lenient, const py::handle& size, const py::handle& resize,
                     const py::handle& crop, const py::handle& crop_seed) {
  std::string copy;
  const std::string_view jpeg = JpegBytes(data, &copy);
  DecodeOptions options =
      MakeDecodeOptions(colorspace, dct, downscale, lenient, size, resize, crop).options;
  SetCropSeed(crop_seed, &options);
  const auto* bytes = reinterpret_cast<const uint8_t*>(jpeg.data());
  ImageShape shape;
  {
    py::gil_scoped_release release;
    shape = ThreadLocalDecoder().OutputShape(bytes, jpeg.size(), options);
  }
  const auto h = static_cast<py::ssize_t>(shape.height);
  const auto w = static_cast<py::ssize_t>(shape.width);
  const auto c = static_cast<py::ssize_t>(shape.channels);
  py::array_t<uint8_t> out = (options.format == PixelFormat::kAuto && c == 1)
                                 ? py::array_t<uint8_t>(std::vector<py::ssize_t>{h, w})
                                 : py::array_t<uint8_t>(std::vector<py::ssize_t>{h, w, c});
  uint8_t* pixels = out.mutable_data();
  {
    // Decodes straight into the array's buffer; the array object itself is
    // not touched without the GIL.
    py::gil_scoped_release release;
    ThreadLocalDecoder().DecodeInto(bytes, jpeg.size(), options, pixels, shape.bytes());
  }
  return out;
}

py::bytes EncodeJpeg(const py::handle& image, int quality, const std::string& subsampling) {
  const EncodeOptions options = ToEncodeOptions(quality, subsampling);
  py::array any = py::array::ensure(image);
  if (!any) {
    PyErr_Clear();
    throw py::type_error(std::string("image must be a uint8 array, not ") +
                         Py_TYPE(image.ptr())->tp_name);
  }
  if (any.dtype().kind() != 'u' || any.itemsize() != 1) {
    throw py::type_error("image must have dtype uint8, not " +
                         py::str(any.dtype()).cast<std::string>());
  }
  auto array = py::array_t<uint8_t, py::array::c_style>::ensure(any);
  if (!array) throw py::error_already_set();
  if (array.ndim() != 2 && array.ndim() != 3) {
    throw py::value_error("image must be H×W or H×W×C, not " + std::to_string(array.ndim()) + "-D");
  }
  const py::ssize_t c = array.ndim() == 3 ? array.shape(2) : 1;
  if (c != 1 && c != 3) {
    throw py::value_error("image must have 1 or 3 channels, not " + std::to_string(c));
  }
  if (array.shape(0) > 65500 || array.shape(1) > 65500) {
    throw py::value_error("image is larger than 65500 pixels on a side");
  }
  const auto h = static_cast<int>(array.shape(0));
  const auto w = static_cast<int>(array.shape(1));
  std::string jpeg;
  {
    py::gil_scoped_release release;
    jpeg = ThreadLocalEncoder().Encode(array.data(), w, h, static_cast<int>(c), options);
  }
  return py::bytes(jpeg);
}

}  // namespace

void BindCodec(py::module_& m) {
  m.def("decode_jpeg", &DecodeJpeg, py::arg("data"), py::arg("colorspace") = "auto",
        py::arg("dct") = "fast", py::arg("downscale") = 1, py::arg("lenient") = false,
        py::arg("size") = py::none(), py::arg("resize") = "short_edge", py::arg("crop") = "center",
        py::arg("crop_seed") = py::none(),
        "Decodes one JPEG into a new uint8 array (H×W×C; H×W for a gray JPEG with "
        "colorspace 'auto'), resized to `size` when given (as gulpdb.Dataset.read).");
  m.def("encode_jpeg", &EncodeJpeg, py::arg("image"), py::arg("quality") = 90,
        py::arg("subsampling") = "444",
        "Encodes a uint8 H×W (gray) or H×W×3 (RGB) image as baseline JPEG bytes.");
}

}  // namespace gulpdb::python
