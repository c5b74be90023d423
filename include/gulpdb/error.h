// Typed errors thrown by every layer of gulpdb.
//
// Every failure is a gulpdb::Error carrying a Code and a message of the form
// "<operation> <path or id>: <detail>". Callers that only care about the kind of
// failure catch the subclass (NotFoundError, CorruptionError, ...); boundaries
// (the CLI's main, the Python bindings) translate exactly once.
//
// Thread safety: these are plain value types.
#ifndef GULPDB_ERROR_H_
#define GULPDB_ERROR_H_

#include <exception>
#include <stdexcept>
#include <string>

#include "gulpdb/export.h"

namespace gulpdb {

enum class ErrorCode {
  kNotFound,           // an id, file or dataset that does not exist
  kInvalidArgument,    // bad input from the caller: empty id, bad selection, bad options ...
  kCorruption,         // data on disk contradicts itself or the index; undecodable JPEG
  kIoError,            // the operating system refused a read, write or sync
  kBusy,               // another process holds the writer lock
  kResourceExhausted,  // out of memory or disk, or a configured limit (map size) was hit
};

// Returns a stable lowercase name for `code` ("not found", "corruption", ...).
inline const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kCorruption:
      return "corruption";
    case ErrorCode::kIoError:
      return "i/o error";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
  }
  return "error";
}

class GULPDB_EXPORT Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ~Error() override = default;
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;
  ErrorCode code() const noexcept { return code_; }

  // Throws a copy of this error, of the same dynamic type, whose message is
  // `prefix` followed by this one's: how a layer adds what it was doing
  // without turning, say, an IdNotFoundError into a plain NotFoundError
  // (which Python would raise as FileNotFoundError instead of KeyError).
  [[noreturn]] void ThrowWithContext(const std::string& prefix) const {
    ThrowWithMessage(prefix + what());
    std::terminate();  // not reached: every ThrowWithMessage throws
  }
  // Throws a copy of this error, of the same dynamic type, with `message`.
  // Every subclass below overrides it; a subclass defined elsewhere that does
  // not is thrown as its nearest base that does.
  [[noreturn]] virtual void ThrowWithMessage(const std::string& message) const {
    throw Error(code_, message);
  }

 private:
  ErrorCode code_;
};

// Defines `Name` deriving from `Base`, with the same code, and its
// ThrowWithMessage.
#define GULPDB_DEFINE_ERROR(Name, Base)                                             \
  class GULPDB_EXPORT Name : public Base {                                          \
   public:                                                                          \
    using Base::Base;                                                               \
    [[noreturn]] void ThrowWithMessage(const std::string& message) const override { \
      throw Name(message);                                                          \
    }                                                                               \
  }

// The six kinds, one per code.
#define GULPDB_DEFINE_KIND(Name, Code)                                              \
  class GULPDB_EXPORT Name : public Error {                                         \
   public:                                                                          \
    explicit Name(const std::string& message) : Error(ErrorCode::Code, message) {}  \
    [[noreturn]] void ThrowWithMessage(const std::string& message) const override { \
      throw Name(message);                                                          \
    }                                                                               \
  }

GULPDB_DEFINE_KIND(NotFoundError, kNotFound);
GULPDB_DEFINE_KIND(InvalidArgumentError, kInvalidArgument);
GULPDB_DEFINE_KIND(CorruptionError, kCorruption);
GULPDB_DEFINE_KIND(IoError, kIoError);
GULPDB_DEFINE_KIND(BusyError, kBusy);
GULPDB_DEFINE_KIND(ResourceExhaustedError, kResourceExhausted);

#undef GULPDB_DEFINE_KIND

// A video id that is not in the dataset (as opposed to a missing file or
// directory): lookups by id throw this.
GULPDB_DEFINE_ERROR(IdNotFoundError, NotFoundError);

// A named entry of the index other than a video that does not exist (a
// split): like IdNotFoundError, a missing key rather than a missing file.
GULPDB_DEFINE_ERROR(NameNotFoundError, NotFoundError);

// A frame index outside the video's frames.
GULPDB_DEFINE_ERROR(OutOfRangeError, InvalidArgumentError);

// A query (gulpdb::Query::Parse) that is not in the query language: the
// message names the byte and what was expected there, then shows the text
// with a caret under it (docs/query.md).
GULPDB_DEFINE_ERROR(QuerySyntaxError, InvalidArgumentError);

// Memory could not be had: an allocation failed, or a request needs more
// memory than a configured memory limit allows (DecodeOptions::max_pixels).
GULPDB_DEFINE_ERROR(OutOfMemoryError, ResourceExhaustedError);

// A configured size limit other than memory was reached (the index map's
// maximum size). A full disk is a plain ResourceExhaustedError.
GULPDB_DEFINE_ERROR(LimitExceededError, ResourceExhaustedError);

// An index built from a GulpIO directory no longer describes it: GulpIO tools
// rewrote, added or removed .gulp/.gmeta files after the import. Re-index
// the directory (ImportOptions::reindex, `gulpdb import DIR --reindex`).
GULPDB_DEFINE_ERROR(StaleIndexError, CorruptionError);

// An object store refused the credentials or the request (HTTP 403): wrong
// or missing keys, an expired token, or a policy that denies access. The
// message names the bucket and where the credentials came from. Python
// raises it as PermissionError.
GULPDB_DEFINE_ERROR(AccessDeniedError, IoError);

#undef GULPDB_DEFINE_ERROR

// Throws the Error subclass that matches `code` (to raise a new error from a
// code; to add context to a caught error, use Error::ThrowWithContext).
[[noreturn]] inline void ThrowError(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::kNotFound:
      throw NotFoundError(message);
    case ErrorCode::kInvalidArgument:
      throw InvalidArgumentError(message);
    case ErrorCode::kCorruption:
      throw CorruptionError(message);
    case ErrorCode::kIoError:
      throw IoError(message);
    case ErrorCode::kBusy:
      throw BusyError(message);
    case ErrorCode::kResourceExhausted:
      throw ResourceExhaustedError(message);
  }
  throw Error(code, message);
}

}  // namespace gulpdb

#endif  // GULPDB_ERROR_H_
