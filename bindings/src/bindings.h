// Shared pieces of the `_gulpdb` extension module: the per-file Bind*
// functions, conversions between Python objects and gulpdb values, and the
// handle types that own the C++ objects behind Python ones.
//
// GIL discipline: every function here that takes py:: arguments runs with the
// GIL held. Long work (index and chunk I/O, JPEG decode and encode) runs inside
// py::gil_scoped_release and touches no Python object there: arguments are
// converted to C++ values first, results are turned into Python objects after.
//
// Processes: a handle created before fork() is never used or destroyed by the
// child (LMDB environments, thread pools and writer locks do not survive a
// fork). The Python layer reopens datasets in the child; a handle the child
// drops is deliberately leaked instead of destroyed (see ForkGuard).
#ifndef GULPDB_BINDINGS_SRC_BINDINGS_H_
#define GULPDB_BINDINGS_SRC_BINDINGS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/jpeg.h"
#include "gulpdb/selection.h"

namespace gulpdb::python {

namespace py = pybind11;

// Runs `work` with the GIL released and returns its result, for the long
// work of the GIL discipline above: `work` touches no Python object.
template <typename Work>
auto WithoutGil(Work&& work) -> decltype(work()) {
  py::gil_scoped_release release;
  return work();
}

// ---- module parts (one per source file) --------------------------------------

void RegisterErrors(py::module_& m);
void BindDataset(py::module_& m);
void BindCodec(py::module_& m);
void BindInterop(py::module_& m);
void BindIngest(py::module_& m);
void BindRemote(py::module_& m);
void BindDecodeOptions(py::module_& m);
void BindView(py::module_& m);

// Wraps a Python callable (or None) as a progress callback that the engine
// may call without the GIL, from any thread: it takes the GIL for the call.
// An exception raised by the callable (KeyboardInterrupt included) stops the
// operation. The callable must outlive the operation.
std::function<void(uint64_t, uint64_t)> Progress(const py::object& callback);

// Adds NativeWriter and NativeDataset.writer (call after BindDataset).
void BindWriter(py::module_& m);

// Adds select, the meta index calls and the split listings to NativeDataset
// (call after BindDataset).
void BindQuery(py::module_& m);
// Adds the version calls to NativeDataset (call after BindDataset).
void BindVersions(py::module_& m);

// ---- errors -----------------------------------------------------------------

// Raises the Python exception for a gulpdb::Error whose kind is "the path does
// not exist" (FileNotFoundError), for calls that open a directory: the
// registered translator maps NotFoundError to KeyError, which is right for ids
// only.
[[noreturn]] void RaiseFileNotFound(const std::string& message);

// ---- conversions --------------------------------------------------------------

// A video id from Python: a str, or an int (Python's or NumPy's) that stands
// for its decimal string, as GulpIO2's integer ids do. Raises TypeError naming
// the accepted types for anything else (bool, float, None, bytes, ...).
std::string ToId(const py::handle& id);

// A collection of video ids (any iterable of what ToId accepts). A bare str or
// bytes is refused with a TypeError that says to pass a list: iterating it
// would silently read its characters as ids. `what` names the argument in
// messages ("ids", "accepted_ids", ...).
std::vector<std::string> ToIdList(const py::handle& ids, const char* what);

// A frame selection from Python: None (all frames), a slice, an int, a
// sequence or 1-D integer NumPy array of indices, or the text forms of
// Selection::Parse ("all", "1:10:2", "1,5,6"). Raises TypeError otherwise.
// Slice bounds beyond int64 clamp, as Python's slicing does. An index beyond
// int64 (a Python int, a NumPy uint64) names no frame: IndexError naming `id`
// and the index (KeyError if `ds` has no such id). `ds` is only read for that
// message (a brief index lookup, with the GIL held).
Selection ToSelection(const py::handle& frames, const Dataset& ds, std::string_view id);

// Decode options from their Python spelling: colorspace "auto", "rgb", "bgr"
// or "gray" (case-insensitive; "grey" and "l" too), dct "fast" or "accurate",
// downscale 1, 2, 4 or 8. Raises ValueError for anything else.
DecodeOptions ToDecodeOptions(const std::string& colorspace, const std::string& dct, int downscale,
                              bool lenient);
EncodeOptions ToEncodeOptions(int quality, const std::string& subsampling);
// The name ToEncodeOptions reads for `subsampling` ("444", "422", "420", "gray").
const char* SubsamplingText(Subsampling subsampling);
// The engine's writer and encode defaults (WriterOptions, EncodeOptions) under
// the names of NativeDataset.writer's arguments: the one home of those
// defaults, which the binding's and the package's writer() use.
pybind11::dict WriterDefaults();

// The largest output side a fixed-size read accepts (libjpeg's limit).
inline constexpr int64_t kMaxOutputSide = 65500;

// Fixed-size output (jpeg.h) from its Python spelling: `size` None or a
// (height, width) pair of ints; `resize` "short_edge", "fit" or "stretch";
// `crop` "center", "random" or None (case-insensitive). Sets the output
// fields of `*options`, whose scale_denom must be 1 when a size is given.
// Raises TypeError for arguments of the wrong type and ValueError for bad
// values and combinations: sides outside 1..65500 or above the pixel limit,
// an unknown mode, crop None with "short_edge" (it must crop), "random" with
// "fit" or "stretch" (nothing to crop), resize or a random crop without a
// size, downscale with a size.
void ApplyOutputSize(const py::handle& size, const py::handle& resize, const py::handle& crop,
                     DecodeOptions* options);

// The window of one read's random crop: `crop_seed` None (a fresh random
// seed) or any int (modulo 2**64); TypeError for anything else. Does nothing
// (and checks nothing) unless `options` crops at random.
void SetCropSeed(const py::handle& crop_seed, DecodeOptions* options);

// _gulpdb.DecodeOptions (decode_options_binding.cc): the checked
// DecodeOptions of reads, and the crop as given (None or a mode), which
// DecodeOptions cannot tell from "center" when nothing is cropped.
struct PyDecodeOptions {
  DecodeOptions options;
  std::optional<std::string> crop;
};

// A PyDecodeOptions from the Python spelling of each option (ToDecodeOptions,
// then ApplyOutputSize); raises as they do.
PyDecodeOptions MakeDecodeOptions(const std::string& colorspace, const std::string& dct,
                                  int downscale, bool lenient, const py::handle& size,
                                  const py::handle& resize, const py::handle& crop);

// Hands decoded frames to NumPy without copying: the DecodedFrames move to the
// heap and a capsule owns them; the arrays are views whose base is that
// capsule. Returns one N×H×W×C array when every frame has the same shape and
// `as_list` is false, else a list of H×W×C arrays sharing the capsule. With
// PixelFormat::kAuto, 1-channel frames drop their channel axis (H×W), as
// GulpIO2 returns them. No frames: an empty list, or with `as_list` false an
// empty 0×0×0×C array (C = 1 for kGray, else 3).
py::object ToArrays(DecodedFrames frames, PixelFormat format, bool as_list);

// The bytes of any object with the buffer protocol (bytearray, memoryview,
// ...), copied: such buffers may change while the GIL is released.
std::string CopyBuffer(const py::handle& buffer);

// Copies the JPEG bytes of a read into a list of `bytes`.
py::list ToBytesList(const StoredFrames& frames);

// ---- handles ----------------------------------------------------------------

// Remembers the process that created an object. A C++ object created before a
// fork must not be destroyed by the child: its destructor would join threads
// that do not exist there, close an LMDB environment the parent still uses,
// or roll back the parent's writes.
class ForkGuard {
 public:
  ForkGuard() : pid_(::getpid()) {}
  bool InOwnerProcess() const { return ::getpid() == pid_; }

  // Keeps `object` alive until the process exits, without ever running its
  // destructor (the process image is discarded at exit anyway).
  template <typename T>
  static void Abandon(T object) {
    static auto* abandoned = new std::vector<std::shared_ptr<void>>();  // never freed, on purpose
    abandoned->push_back(std::shared_ptr<void>(new T(std::move(object)), [](void*) {}));
  }

 private:
  pid_t pid_;
};

// Owns the Dataset behind a Python `_gulpdb.NativeDataset`. Reads copy the
// shared_ptr (with the GIL held) before releasing the GIL, so close() from
// another thread never frees a Dataset under a running read.
class DatasetHandle {
 public:
  explicit DatasetHandle(std::shared_ptr<Dataset> dataset);
  ~DatasetHandle();
  DatasetHandle(const DatasetHandle&) = delete;
  DatasetHandle& operator=(const DatasetHandle&) = delete;

  // The dataset; raises ValueError once closed, RuntimeError in a forked child.
  std::shared_ptr<Dataset> Get() const;
  void Close();
  bool closed() const { return dataset_ == nullptr; }
  bool in_owner_process() const { return guard_.InOwnerProcess(); }

 private:
  std::shared_ptr<Dataset> dataset_;
  ForkGuard guard_;
};

// on_duplicate of appends, ingest, merge and import: "error", "skip" or
// "replace" (gulpdb::OnDuplicateFromName); else ValueError.
OnDuplicate ToOnDuplicate(const std::string& text);

}  // namespace gulpdb::python

#endif  // GULPDB_BINDINGS_SRC_BINDINGS_H_
