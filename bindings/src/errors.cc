// The one place where gulpdb::Error becomes a Python exception.
//
//   NotFoundError          KeyError (a missing id or split), FileNotFoundError (a missing
//                          file or directory: see RaiseFileNotFound and below)
//   InvalidArgumentError   ValueError; IndexError for a frame index out of range
//   IoError                OSError; PermissionError for an AccessDeniedError
//                          (an object store refused the credentials, HTTP 403)
//   BusyError              gulpdb.BusyError, a subclass of OSError
//   CorruptionError        gulpdb.CorruptionError, a subclass of OSError (as
//                          Pillow's "image file is truncated" is an OSError);
//                          StaleIndexError: gulpdb.StaleIndexError, a subclass
//                          of gulpdb.CorruptionError
//   ResourceExhaustedError MemoryError for an OutOfMemoryError (memory ran
//                          out, or a decode would exceed the pixel limit);
//                          OSError otherwise (a full disk, LimitExceededError
//                          for the index map size limit)
#include <Python.h>

#include <cerrno>
#include <exception>
#include <string>

#include "bindings/src/bindings.h"
#include "gulpdb/error.h"
#include "util/url_text.h"

namespace gulpdb::python {
namespace {

// Sets an OSError subclass with errno and message, as OSError(errno, message).
void SetOsError(PyObject* type, int err, const std::string& message) {
  PyObject* args = Py_BuildValue("(is)", err, message.c_str());
  if (args == nullptr) return;  // the error from Py_BuildValue stays set
  PyErr_SetObject(type, args);
  Py_DECREF(args);
}

PyObject* busy_error = nullptr;         // gulpdb.BusyError (set by RegisterErrors)
PyObject* corruption_error = nullptr;   // gulpdb.CorruptionError
PyObject* stale_index_error = nullptr;  // gulpdb.StaleIndexError, a CorruptionError

void Translate(const Error& e) {
  // URLs in messages never show user information ("user:secret@").
  const std::string message = util::RedactUrls(e.what());
  switch (e.code()) {
    case ErrorCode::kNotFound:
      if (dynamic_cast<const IdNotFoundError*>(&e) != nullptr ||
          dynamic_cast<const NameNotFoundError*>(&e) != nullptr) {
        PyErr_SetString(PyExc_KeyError, message.c_str());
      } else {
        SetOsError(PyExc_FileNotFoundError, ENOENT, message);
      }
      return;
    case ErrorCode::kInvalidArgument:
      PyErr_SetString(
          dynamic_cast<const OutOfRangeError*>(&e) != nullptr ? PyExc_IndexError : PyExc_ValueError,
          message.c_str());
      return;
    case ErrorCode::kCorruption:
      PyErr_SetString(dynamic_cast<const StaleIndexError*>(&e) != nullptr ? stale_index_error
                                                                          : corruption_error,
                      message.c_str());
      return;
    case ErrorCode::kIoError:
      if (dynamic_cast<const AccessDeniedError*>(&e) != nullptr) {
        SetOsError(PyExc_PermissionError, EACCES, message);
      } else {
        PyErr_SetString(PyExc_OSError, message.c_str());
      }
      return;
    case ErrorCode::kBusy:
      SetOsError(busy_error, EBUSY, message);
      return;
    case ErrorCode::kResourceExhausted:
      if (dynamic_cast<const OutOfMemoryError*>(&e) != nullptr) {
        PyErr_SetString(PyExc_MemoryError, message.c_str());
      } else {
        PyErr_SetString(PyExc_OSError, message.c_str());
      }
      return;
  }
  PyErr_SetString(PyExc_RuntimeError, message.c_str());
}

}  // namespace

[[noreturn]] void RaiseFileNotFound(const std::string& message) {
  SetOsError(PyExc_FileNotFoundError, ENOENT, message);
  throw py::error_already_set();
}

void RegisterErrors(py::module_& m) {
  // New references that are never released: the classes live as long as the
  // process (a static py::object would be released after the interpreter).
  busy_error = PyErr_NewExceptionWithDoc(
      "gulpdb.BusyError",
      "Another writer (in this or another process) holds the dataset's writer lock.\n\n"
      "A subclass of OSError; its errno is EBUSY.",
      PyExc_OSError, nullptr);
  if (busy_error == nullptr) throw py::error_already_set();
  corruption_error = PyErr_NewExceptionWithDoc(
      "gulpdb.CorruptionError",
      "The files of a dataset contradict each other or the index, or a frame is not a\n"
      "decodable JPEG. A subclass of OSError (like Pillow's errors for broken images).",
      PyExc_OSError, nullptr);
  if (corruption_error == nullptr) throw py::error_already_set();
  stale_index_error = PyErr_NewExceptionWithDoc(
      "gulpdb.StaleIndexError",
      "A GulpIO directory changed (by GulpIO tools) after gulpdb indexed it in place:\n"
      "the index no longer describes its .gulp/.gmeta files. Re-index it with\n"
      "gulpdb.import_gulpio(path, reindex=True) or `gulpdb import DIR --reindex`.\n"
      "A subclass of CorruptionError.",
      corruption_error, nullptr);
  if (stale_index_error == nullptr) throw py::error_already_set();
  m.attr("BusyError") = py::reinterpret_borrow<py::object>(busy_error);
  m.attr("StaleIndexError") = py::reinterpret_borrow<py::object>(stale_index_error);
  m.attr("CorruptionError") = py::reinterpret_borrow<py::object>(corruption_error);

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      Translate(e);
    }
  });
}

}  // namespace gulpdb::python
