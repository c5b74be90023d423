// Conversions between Python objects and gulpdb values (bindings.h).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "bindings/src/bindings.h"
#include "gulpdb/error.h"

namespace gulpdb::python {
namespace {

const char* TypeName(const py::handle& value) { return Py_TYPE(value.ptr())->tp_name; }

// A Python bool or a NumPy bool_ (which NumPy 1.x still lets pass as an
// index): neither is an id or a frame index.
// Only for objects with __index__ (the attribute lookup is slow on others).
bool IsBool(const py::handle& value) {
  if (PyBool_Check(value.ptr())) return true;
  if (PyLong_CheckExact(value.ptr()) || !py::hasattr(value, "dtype")) return false;
  return py::str(value.attr("dtype").attr("kind")).cast<std::string>() == "b";
}

// The integer value of `value` (anything with __index__), or nullopt when it
// lies outside int64; then *sign is its sign.
std::optional<int64_t> ToInt64(const py::handle& value, int* sign) {
  const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {
    *sign = overflow;
    return std::nullopt;
  }
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<int64_t>(v);
}

// A slice bound; one beyond int64 clamps, which selects what Python's
// slicing selects (a video has fewer than 2**32 frames).
std::optional<int64_t> OptionalIndex(const py::handle& value) {
  if (value.is_none()) return std::nullopt;
  int sign = 0;
  if (auto v = ToInt64(value, &sign)) return v;
  return sign > 0 ? INT64_MAX : INT64_MIN;
}

// An index that does not fit in int64 cannot name a frame: the same
// IndexError the engine raises for any index out of range.
[[noreturn]] void RaiseHugeIndex(const py::handle& index, const Dataset& ds, std::string_view id) {
  const std::string text = py::str(index).cast<std::string>();
  const uint32_t frames = ds.FrameCount(id);  // KeyError first for a missing id
  throw py::index_error("select frames of " + std::string(id) + ": index " + text +
                        " is out of range for " + std::to_string(frames) + " frames");
}

int64_t IndexOrRaise(const py::handle& index, const Dataset& ds, std::string_view id) {
  int sign = 0;
  if (auto v = ToInt64(index, &sign)) return *v;
  RaiseHugeIndex(index, ds, id);
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Selection FromIndexArray(const py::array& array, const Dataset& ds, std::string_view id) {
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    throw py::type_error("frame indices must be integers, not an array of dtype " +
                         py::str(array.dtype()).cast<std::string>() +
                         (kind == 'b' ? " (for a boolean mask use numpy.flatnonzero(mask))" : ""));
  }
  if (array.ndim() == 0) return Selection::Indices({IndexOrRaise(array.attr("item")(), ds, id)});
  if (array.ndim() != 1) {
    throw py::value_error("frame indices must be a 1-D array, not " + std::to_string(array.ndim()) +
                          "-D");
  }
  if (kind == 'u' && array.itemsize() == 8) {
    // uint64 does not convert to int64 safely; a value that large names no frame.
    auto values = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    if (!values) throw py::error_already_set();
    std::vector<int64_t> indices;
    indices.reserve(static_cast<size_t>(values.size()));
    for (py::ssize_t i = 0; i < values.size(); ++i) {
      const uint64_t v = values.data()[i];
      if (v > static_cast<uint64_t>(INT64_MAX)) RaiseHugeIndex(py::int_(v), ds, id);
      indices.push_back(static_cast<int64_t>(v));
    }
    return Selection::Indices(std::move(indices));
  }
  auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!values) throw py::error_already_set();
  return Selection::Indices(std::vector<int64_t>(values.data(), values.data() + values.size()));
}

void DeleteFrames(void* frames) { delete static_cast<DecodedFrames*>(frames); }

py::array ViewOf(const DecodedFrames& frames, size_t i, bool squeeze, const py::capsule& base) {
  const ImageShape& s = frames.shape(i);
  const auto h = static_cast<py::ssize_t>(s.height);
  const auto w = static_cast<py::ssize_t>(s.width);
  const auto c = static_cast<py::ssize_t>(s.channels);
  if (squeeze && c == 1) {
    return py::array(py::dtype::of<uint8_t>(), {h, w}, {w, py::ssize_t{1}}, frames.data(i), base);
  }
  return py::array(py::dtype::of<uint8_t>(), {h, w, c}, {w * c, c, py::ssize_t{1}}, frames.data(i),
                   base);
}

}  // namespace

std::string ToId(const py::handle& id) {
  if (PyUnicode_Check(id.ptr())) return py::reinterpret_borrow<py::str>(id).cast<std::string>();
  if (PyIndex_Check(id.ptr()) && !IsBool(id)) {
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(id.ptr()));
    if (!index) throw py::error_already_set();
    return py::str(index).cast<std::string>();
  }
  throw py::type_error(std::string("a video id must be a str, or an int standing for its decimal "
                                   "string (as GulpIO2's integer ids), not ") +
                       TypeName(id));
}

std::vector<std::string> ToIdList(const py::handle& ids, const char* what) {
  if (PyUnicode_Check(ids.ptr()) || PyBytes_Check(ids.ptr()) || PyByteArray_Check(ids.ptr())) {
    std::string shown = py::repr(ids).cast<std::string>();
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    throw py::type_error(std::string(what) + " must be a collection of video ids (a list, tuple " +
                         "or other iterable of str or int), not a single " + TypeName(ids) + " " +
                         shown + ": pass [" + shown + "] for one id");
  }
  const auto iterator = py::reinterpret_steal<py::object>(PyObject_GetIter(ids.ptr()));
  if (!iterator) {
    PyErr_Clear();
    throw py::type_error(std::string(what) +
                         " must be a collection of video ids (a list, tuple or other iterable "
                         "of str or int), not " +
                         TypeName(ids));
  }
  std::vector<std::string> out;
  for (const py::handle& item : py::reinterpret_borrow<py::iterator>(iterator)) {
    try {
      out.push_back(ToId(item));
    } catch (const py::type_error& e) {
      throw py::type_error(std::string(what) + "[" + std::to_string(out.size()) + "]: " + e.what());
    }
  }
  return out;
}

Selection ToSelection(const py::handle& frames, const Dataset& ds, std::string_view id) {
  if (frames.is_none()) return Selection::All();
  if (py::isinstance<py::slice>(frames)) {
    return Selection::Slice(OptionalIndex(frames.attr("start")), OptionalIndex(frames.attr("stop")),
                            OptionalIndex(frames.attr("step")));
  }
  if (py::isinstance<py::str>(frames)) return Selection::Parse(frames.cast<std::string>());
  if (py::isinstance<py::array>(frames)) {
    return FromIndexArray(py::reinterpret_borrow<py::array>(frames), ds, id);
  }
  if (PyIndex_Check(frames.ptr())) {
    if (IsBool(frames)) throw py::type_error("a bool is not a frame selection");
    return Selection::Indices({IndexOrRaise(frames, ds, id)});
  }
  if (py::isinstance<py::sequence>(frames) && !py::isinstance<py::bytes>(frames)) {
    std::vector<int64_t> indices;
    indices.reserve(py::len(frames));
    for (const py::handle& item : frames) {
      if (!PyIndex_Check(item.ptr()) || IsBool(item)) {
        throw py::type_error("frame indices must be integers, not " +
                             std::string(Py_TYPE(item.ptr())->tp_name));
      }
      indices.push_back(IndexOrRaise(item, ds, id));
    }
    return Selection::Indices(std::move(indices));
  }
  throw py::type_error(
      "frames must be None, a slice, an int, a sequence or 1-D array of ints, or a "
      "selection string such as '0:16:2', not " +
      std::string(Py_TYPE(frames.ptr())->tp_name));
}

DecodeOptions ToDecodeOptions(const std::string& colorspace, const std::string& dct, int downscale,
                              bool lenient) {
  DecodeOptions options;
  const std::string cs = Lower(colorspace);
  if (cs == "auto") {
    options.format = PixelFormat::kAuto;
  } else if (cs == "rgb") {
    options.format = PixelFormat::kRGB;
  } else if (cs == "bgr") {
    options.format = PixelFormat::kBGR;
  } else if (cs == "gray" || cs == "grey" || cs == "l") {
    options.format = PixelFormat::kGray;
  } else {
    throw py::value_error("colorspace must be 'auto', 'rgb', 'bgr' or 'gray', not '" + colorspace +
                          "'");
  }
  const std::string d = Lower(dct);
  if (d == "fast") {
    options.dct = DctMethod::kFast;
  } else if (d == "accurate") {
    options.dct = DctMethod::kAccurate;
  } else {
    throw py::value_error("dct must be 'fast' or 'accurate', not '" + dct + "'");
  }
  if (downscale != 1 && downscale != 2 && downscale != 4 && downscale != 8) {
    throw py::value_error("downscale must be 1, 2, 4 or 8, not " + std::to_string(downscale));
  }
  options.scale_denom = downscale;
  options.lenient = lenient;
  return options;
}

namespace {

// One side of `size`: a Python or NumPy integer (not a bool).
int64_t SizeSide(const py::handle& side) {
  if (IsBool(side) || !PyIndex_Check(side.ptr())) {
    throw py::type_error(std::string("size must hold ints, not ") + TypeName(side) + " " +
                         py::repr(side).cast<std::string>());
  }
  int sign = 0;
  if (auto v = ToInt64(side, &sign)) return *v;
  return sign > 0 ? INT64_MAX : INT64_MIN;
}

// A mode argument: a str (case-insensitive), or None where `none_ok`.
std::optional<std::string> ModeName(const py::handle& value, const char* what, bool none_ok) {
  if (value.is_none() && none_ok) return std::nullopt;
  if (!py::isinstance<py::str>(value)) {
    throw py::type_error(std::string(what) + " must be a str" + (none_ok ? " or None" : "") +
                         ", not " + TypeName(value));
  }
  return Lower(value.cast<std::string>());
}

}  // namespace

void ApplyOutputSize(const py::handle& size, const py::handle& resize, const py::handle& crop,
                     DecodeOptions* options) {
  const std::string mode = ModeName(resize, "resize", false).value();
  const std::optional<std::string> crop_mode = ModeName(crop, "crop", true);
  if (mode == "short_edge") {
    options->resize = ResizeMode::kShortEdge;
  } else if (mode == "fit") {
    options->resize = ResizeMode::kFit;
  } else if (mode == "stretch") {
    options->resize = ResizeMode::kStretch;
  } else {
    throw py::value_error("resize must be 'short_edge', 'fit' or 'stretch', not " +
                          py::repr(resize).cast<std::string>());
  }
  if (crop_mode && *crop_mode != "center" && *crop_mode != "random") {
    throw py::value_error("crop must be 'center', 'random' or None, not " +
                          py::repr(crop).cast<std::string>());
  }
  const bool random = crop_mode && *crop_mode == "random";
  if (size.is_none()) {
    if (options->resize != ResizeMode::kShortEdge || random) {
      const std::string what = random ? "crop=" + py::repr(crop).cast<std::string>()
                                      : "resize=" + py::repr(resize).cast<std::string>();
      throw py::value_error(what + " needs an output size: pass size=(height, width)");
    }
    return;
  }
  // A NumPy array (or any sequence) of two ints is a pair, though an array
  // also passes PyIndex_Check; only a single integer is refused as one.
  const bool sequence = PySequence_Check(size.ptr()) != 0 &&
                        !(py::hasattr(size, "ndim") && py::getattr(size, "ndim").cast<int>() == 0);
  if (!sequence && PyIndex_Check(size.ptr()) && !IsBool(size)) {
    const std::string n = py::str(size).cast<std::string>();
    throw py::type_error("size must be a (height, width) pair, not the int " + n + ": pass (" + n +
                         ", " + n + ") for a square");
  }
  if (py::isinstance<py::str>(size) || py::isinstance<py::bytes>(size) || !sequence) {
    throw py::type_error(std::string("size must be None or a (height, width) pair of ints, not ") +
                         TypeName(size));
  }
  const auto sides = py::reinterpret_borrow<py::sequence>(size);
  if (sides.size() != 2) {
    throw py::value_error("size must be a (height, width) pair, not " +
                          std::to_string(sides.size()) + " numbers");
  }
  const int64_t h = SizeSide(sides[0]);
  const int64_t w = SizeSide(sides[1]);
  const std::string text = "(" + std::to_string(h) + ", " + std::to_string(w) + ")";
  if (h < 1 || w < 1) throw py::value_error("size must be positive, not " + text);
  if (h > kMaxOutputSide || w > kMaxOutputSide) {
    throw py::value_error("size must be at most " + std::to_string(kMaxOutputSide) +
                          " on each side, not " + text);
  }
  if (static_cast<uint64_t>(h) * static_cast<uint64_t>(w) > options->max_pixels) {
    throw py::value_error("size " + text + " has more pixels than the decoder's limit of " +
                          std::to_string(options->max_pixels));
  }
  if (options->scale_denom != 1) {
    throw py::value_error("downscale=" + std::to_string(options->scale_denom) +
                          " cannot be combined with size=: with a size the decoder picks the "
                          "DCT scaling itself");
  }
  if (!crop_mode && options->resize == ResizeMode::kShortEdge) {
    throw py::value_error(
        "resize='short_edge' scales the frame to cover size, so it must be cropped: pass "
        "crop='center' or 'random', or resize='fit' (pad) or 'stretch' to keep the whole frame");
  }
  if (random && options->resize != ResizeMode::kShortEdge) {
    throw py::value_error("crop='random' needs resize='short_edge': resize='" + mode +
                          "' keeps the whole frame, so there is nothing to crop");
  }
  options->out_height = static_cast<int>(h);
  options->out_width = static_cast<int>(w);
  options->crop = random ? CropMode::kRandom : CropMode::kCenter;
}

void SetCropSeed(const py::handle& crop_seed, DecodeOptions* options) {
  if (options->crop != CropMode::kRandom) return;
  if (crop_seed.is_none()) {
    std::random_device device;
    options->crop_seed = (uint64_t{device()} << 32) ^ device();
    return;
  }
  if (IsBool(crop_seed) || !PyIndex_Check(crop_seed.ptr())) {
    throw py::type_error(std::string("crop_seed must be an int or None, not ") +
                         TypeName(crop_seed));
  }
  const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(crop_seed.ptr()));
  if (!index) throw py::error_already_set();
  // Any int, taken modulo 2**64 (negative seeds included).
  const unsigned long long seed = PyLong_AsUnsignedLongLongMask(index.ptr());
  if (seed == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    throw py::error_already_set();
  }
  options->crop_seed = static_cast<uint64_t>(seed);
}

const char* SubsamplingText(Subsampling subsampling) {
  switch (subsampling) {
    case Subsampling::k444:
      return "444";
    case Subsampling::k422:
      return "422";
    case Subsampling::k420:
      return "420";
    case Subsampling::kGray:
      return "gray";
  }
  return "444";
}

py::dict WriterDefaults() {
  const WriterOptions writer;
  const EncodeOptions encode;
  py::dict d;
  d["on_duplicate"] = OnDuplicateName(writer.on_duplicate);
  d["lock_timeout"] = std::chrono::duration<double>(writer.lock_timeout).count();
  d["check_jpeg_markers"] = writer.check_jpeg_markers;
  d["quality"] = encode.quality;
  d["subsampling"] = SubsamplingText(encode.subsampling);
  d["rollover"] = writer.rollover;
  return d;
}

EncodeOptions ToEncodeOptions(int quality, const std::string& subsampling) {
  EncodeOptions options;
  if (quality < 1 || quality > 100) {
    throw py::value_error("quality must be in 1..100, not " + std::to_string(quality));
  }
  options.quality = quality;
  const std::string s = Lower(subsampling);
  if (s == "444" || s == "4:4:4") {
    options.subsampling = Subsampling::k444;
  } else if (s == "422" || s == "4:2:2") {
    options.subsampling = Subsampling::k422;
  } else if (s == "420" || s == "4:2:0") {
    options.subsampling = Subsampling::k420;
  } else if (s == "gray" || s == "grey") {
    options.subsampling = Subsampling::kGray;
  } else {
    throw py::value_error("subsampling must be '444', '422', '420' or 'gray', not '" + subsampling +
                          "'");
  }
  return options;
}

py::object ToArrays(DecodedFrames frames, PixelFormat format, bool as_list) {
  const bool squeeze = format == PixelFormat::kAuto;
  if (frames.empty()) {
    if (as_list) return py::list();
    const py::ssize_t channels = format == PixelFormat::kGray ? 1 : 3;
    return py::array_t<uint8_t>(std::vector<py::ssize_t>{0, 0, 0, channels});
  }
  auto owned = std::make_unique<DecodedFrames>(std::move(frames));
  // The capsule takes ownership only once it exists (if creating it throws,
  // `owned` still frees the frames).
  py::capsule base(owned.get(), &DeleteFrames);
  const DecodedFrames& f = *owned.release();

  if (f.uniform() && !as_list) {
    const ImageShape& s = f.shape(0);
    const auto n = static_cast<py::ssize_t>(f.size());
    const auto h = static_cast<py::ssize_t>(s.height);
    const auto w = static_cast<py::ssize_t>(s.width);
    const auto c = static_cast<py::ssize_t>(s.channels);
    if (squeeze && c == 1) {
      return py::array(py::dtype::of<uint8_t>(), {n, h, w}, {h * w, w, py::ssize_t{1}}, f.data(0),
                       base);
    }
    return py::array(py::dtype::of<uint8_t>(), {n, h, w, c}, {h * w * c, w * c, c, py::ssize_t{1}},
                     f.data(0), base);
  }
  py::list out(f.size());
  for (size_t i = 0; i < f.size(); ++i) out[i] = ViewOf(f, i, squeeze, base);
  return out;
}

std::string CopyBuffer(const py::handle& buffer) {
  const auto bytes = py::reinterpret_steal<py::bytes>(PyBytes_FromObject(buffer.ptr()));
  if (!bytes) throw py::error_already_set();
  return bytes.cast<std::string>();
}

py::list ToBytesList(const StoredFrames& frames) {
  py::list out(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string_view jpeg = frames[i];
    out[i] = py::bytes(jpeg.data(), jpeg.size());
  }
  return out;
}

OnDuplicate ToOnDuplicate(const std::string& text) {
  if (const std::optional<OnDuplicate> policy = OnDuplicateFromName(text)) return *policy;
  throw py::value_error("on_duplicate must be 'error', 'skip' or 'replace', not '" + text + "'");
}

}  // namespace gulpdb::python
