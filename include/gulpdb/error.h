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

#include <stdexcept>
#include <string>

namespace gulpdb {

enum class ErrorCode {
  kNotFound,           // an id, file or dataset that does not exist
  kInvalidArgument,    // bad input from the caller: empty id, bad selection, bad options ...
  kCorruption,         // data on disk contradicts itself or the index; undecodable JPEG
  kIoError,            // the operating system refused a read, write or sync
  kBusy,               // another process holds the writer lock
  kResourceExhausted,  // a configured limit (map size, key size) was hit
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

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

#define GULPDB_DEFINE_ERROR(Name, Code)                                            \
  class Name : public Error {                                                      \
   public:                                                                         \
    explicit Name(const std::string& message) : Error(ErrorCode::Code, message) {} \
  }

GULPDB_DEFINE_ERROR(NotFoundError, kNotFound);
GULPDB_DEFINE_ERROR(InvalidArgumentError, kInvalidArgument);
GULPDB_DEFINE_ERROR(CorruptionError, kCorruption);
GULPDB_DEFINE_ERROR(IoError, kIoError);
GULPDB_DEFINE_ERROR(BusyError, kBusy);
GULPDB_DEFINE_ERROR(ResourceExhaustedError, kResourceExhausted);

#undef GULPDB_DEFINE_ERROR

// A video id that is not in the dataset (as opposed to a missing file or
// directory): lookups by id throw this.
class IdNotFoundError : public NotFoundError {
 public:
  using NotFoundError::NotFoundError;
};

// A frame index outside the video's frames.
class OutOfRangeError : public InvalidArgumentError {
 public:
  using InvalidArgumentError::InvalidArgumentError;
};

// Throws the Error subclass that matches `code`.
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
