// Writing one JSON object's text as Python's json.dumps spaces it: ", "
// between members, ": " after a key, strings in the ensure_ascii form
// (PythonJsonString). It writes nothing it was not asked for, so a caller
// whose text is hashed (a manifest, a chunk page) keeps its bytes: a line
// break comes only where Break asks for one.
//
// Thread safety: none; one writer per object being written. The string it
// appends to must outlive it.
#ifndef GULPDB_ENGINE_JSON_JSON_WRITER_H_
#define GULPDB_ENGINE_JSON_JSON_WRITER_H_

#include <string>
#include <string_view>

#include "engine/json/json_text.h"

namespace gulpdb::engine {

class JsonObjectWriter {
 public:
  // Appends '{' to *out.
  explicit JsonObjectWriter(std::string* out) : out_(out) { *out_ += '{'; }

  // The next member begins on a new line, indented by one space.
  JsonObjectWriter& Break() {
    break_ = true;
    return *this;
  }
  // Throws InvalidArgumentError when `value` is not UTF-8 (PythonJsonString).
  JsonObjectWriter& String(std::string_view key, std::string_view value) {
    AppendPythonJsonString(value, &Key(key));
    return *this;
  }
  template <typename Int>
  JsonObjectWriter& Number(std::string_view key, Int value) {
    Key(key) += std::to_string(value);
    return *this;
  }
  JsonObjectWriter& Bool(std::string_view key, bool value) {
    Key(key) += value ? "true" : "false";
    return *this;
  }
  JsonObjectWriter& Null(std::string_view key) {
    Key(key) += "null";
    return *this;
  }
  // Keys are the format's own names, written as they are (not escaped).
  // Writes the separator and `"key": `; the caller appends the value's JSON
  // text (a nested object's writer, a list) to the string returned.
  std::string& Key(std::string_view key) {
    if (break_) {
      *out_ += first_ ? "\n " : ",\n ";
    } else if (!first_) {
      *out_ += ", ";
    }
    first_ = false;
    break_ = false;
    *out_ += '"';
    out_->append(key.data(), key.size());
    *out_ += "\": ";
    return *out_;
  }
  // Appends '}'.
  void Close() { *out_ += '}'; }

 private:
  std::string* out_;
  bool first_ = true;
  bool break_ = false;
};

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_JSON_JSON_WRITER_H_
