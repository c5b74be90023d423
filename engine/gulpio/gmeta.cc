// .gmeta reading and writing.
//
// Why a hand-written scanner. bench/gmeta_bench.cc measured, on a synthetic
// 1.07 GB .gmeta (781,135 entries, 35.2 M frames; page cache warm; Debian 12,
// g++ 12 -O3, a 2-vCPU VM shared with other builds, best of 3):
//
//   method                                 MB/s (wall)  MB per CPU-s  peak RSS   / file
//   this reader (streaming, 1 MiB reads)       602          612        4.8 MB    0.45%
//   ... plus NormalizeJson on each meta        417          417        4.8 MB    0.45%
//   simdjson 3.0.1 On-Demand, fallback         297          297        2.37 GB   221%
//   simdjson 3.0.1 On-Demand, -march=haswell    98-331      231-331    2.37 GB   221%
//   simdjson 3.0.1 DOM (icelake kernel)        120          135        4.98 GB   464%
//   RapidJSON 1.1 SAX, 64 KiB FileReadStream    99          172        3.8 MB    0.36%
//   read(2) alone                             4563         4608        4.6 MB    0.43%
//
// Under heavier load from other processes the reader measured 286-588 MB/s
// wall (424-612 MB per CPU-second); read sizes from 64 KiB to 4 MiB were
// within that noise. Beyond speed:
//   - simdjson needs the whole document in memory (2-5x the file size here),
//     cannot parse a document over 4 GiB at all (SIMDJSON_MAXSIZE_BYTES), and
//     rejects NaN/Infinity and integers above 2**64, which GulpIO meta holds.
//   - RapidJSON SAX streams, but only hands out values: meta_data would have
//     to be re-serialized (losing the exact text), and it also accepts "Inf"
//     and "-Inf", which Python does not.
//   - This scanner does one pass over fixed-size blocks, keeps meta_data as
//     the exact bytes of the file, accepts exactly Python's dialect, and names
//     the byte offset of every error. frame_info, ~80% of the bytes, has a
//     fast path for json.dump's layout; anything else takes the general path.

#include "engine/gulpio/gmeta.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

#include "engine/json/json_text.h"
#include "gulpdb/error.h"
#include "util/crc32c.h"
#include "util/file_io.h"

namespace gulpdb::engine {
namespace {

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string DescribeChar(char c) {
  const auto b = static_cast<unsigned char>(c);
  if (b >= 0x21 && b <= 0x7e) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 0xf];
}

// An id for an error message: JSON-quoted, cut to a readable length on a
// character boundary.
std::string QuoteId(std::string_view id) {
  constexpr size_t kMaxShown = 80;
  if (id.size() <= kMaxShown) return PythonJsonString(id);
  size_t cut = kMaxShown;
  while (cut > 0 && (static_cast<unsigned char>(id[cut]) & 0xc0) == 0x80) --cut;
  return PythonJsonString(id.substr(0, cut)) + "...";
}

// Thrown by EntryParser when an entry runs past the buffered bytes. It
// happens about once per block, so an exception keeps the parsing code free
// of a status check after every step without costing anything measurable.
struct NeedMoreInput {};

[[noreturn]] void FailAt(const std::string& path, uint64_t offset, const std::string& what) {
  throw CorruptionError("read gmeta " + path + ": byte " + std::to_string(offset) + ": " + what);
}

// The grammar of one entry, `"id": {"frame_info": [...], "meta_data": [...]}`,
// read out of the reader's buffered bytes; the reader owns the file, the
// blocks and the object around the entries. Offsets are into the buffer and
// never pass its end; they become file offsets by adding its base.
class EntryParser {
 public:
  explicit EntryParser(const std::string& path) : path_(path) {}

  // Parses the entry whose id starts at buf[pos] into *entry and returns the
  // offset after it. buf holds `end` bytes and the sentinel; buf[0] is at
  // file offset `base`. Throws NeedMoreInput when the entry runs past them,
  // CorruptionError naming the file offset (and the entry's id, once read)
  // when it breaks the grammar.
  size_t Parse(const char* buf, size_t end, uint64_t base, size_t pos, GmetaEntry* entry) {
    buf_ = buf;
    end_ = end;
    base_ = base;
    size_t p = pos;
    entry->offset = base_ + p;
    current_ = entry;
    id_known_ = false;
    JsonScanResult r = ScanJsonString(Window(), p, &entry->id);
    Check(r, "id: ");
    id_known_ = true;
    p = Space(r.pos);
    if (buf_[p] != ':') Unexpected(p, "expected ':' after the id");
    p = Space(p + 1);
    if (buf_[p] != '{') {
      Unexpected(p, "expected an object {\"frame_info\": ..., \"meta_data\": ...}");
    }
    p = Space(p + 1);
    bool have_frame_info = false;
    bool have_meta_data = false;
    if (buf_[p] == '}') {
      ++p;
    } else {
      for (;;) {
        const size_t key_pos = p;
        if (buf_[p] != '"') Unexpected(p, "expected a key (a JSON string)");
        r = ScanJsonString(Window(), p, &key_);
        Check(r, "key: ");
        p = Space(r.pos);
        if (buf_[p] != ':') Unexpected(p, "expected ':' after a key");
        p = Space(p + 1);
        if (key_ == "frame_info") {
          if (have_frame_info) EntryFail(key_pos, "duplicate key \"frame_info\"");
          have_frame_info = true;
          p = ParseFrameInfo(p, &entry->frame_info);
        } else if (key_ == "meta_data") {
          if (have_meta_data) EntryFail(key_pos, "duplicate key \"meta_data\"");
          have_meta_data = true;
          if (buf_[p] != '[') Unexpected(p, "meta_data must be a list");
          r = ScanJsonValue(Window(), p, /*input_complete=*/false);
          Check(r, "meta_data: ");
          entry->meta_data.assign(buf_ + p, r.pos - p);
          p = r.pos;
        } else {
          EntryFail(key_pos, "unknown key " + QuoteId(key_) +
                                 " (expected \"frame_info\" and \"meta_data\")");
        }
        p = Space(p);
        if (buf_[p] == ',') {
          p = Space(p + 1);
        } else if (buf_[p] == '}') {
          ++p;
          break;
        } else {
          Unexpected(p, "expected ',' or '}'");
        }
      }
    }
    if (!have_frame_info) EntryFail(pos, "no \"frame_info\"");
    if (!have_meta_data) EntryFail(pos, "no \"meta_data\"");
    return p;
  }

 private:
  size_t Space(size_t p) const {
    while (IsJsonSpace(buf_[p])) ++p;
    return p;
  }
  std::string_view Window() const { return std::string_view(buf_, end_); }

  // Failure inside the entry whose id was just read; the message names it.
  [[noreturn]] void EntryFail(size_t p, const std::string& what) const {
    FailAt(path_, base_ + p, "entry " + QuoteId(current_->id) + ": " + what);
  }
  // buf_[p] is not what the grammar allows there: either the buffered bytes
  // ran out, or the file is corrupt.
  [[noreturn]] void Unexpected(size_t p, const std::string& expected) const {
    if (p >= end_) throw NeedMoreInput{};
    EntryFail(p, expected + ", found " + DescribeChar(buf_[p]));
  }

  // kOk passes; kTruncated asks for more input; kInvalid is corruption.
  void Check(const JsonScanResult& result, const char* context) const {
    if (result.status == JsonScanStatus::kTruncated) throw NeedMoreInput{};
    if (result.status == JsonScanStatus::kInvalid) {
      if (id_known_) {
        EntryFail(result.pos, context + result.error);
      } else {
        FailAt(path_, base_ + result.pos, context + result.error);
      }
    }
  }

  size_t ParseFrameInfo(size_t p, std::vector<FrameInfo>* frames) const {
    frames->clear();
    if (buf_[p] != '[') Unexpected(p, "frame_info must be a list of [offset, pad, length]");
    p = Space(p + 1);
    if (buf_[p] == ']') return p + 1;
    for (;;) {
      size_t next = ParseCompactTriple(p, frames);
      if (next == 0) next = ParseTriple(p, frames);
      p = next;
      if (buf_[p] == ',' && buf_[p + 1] == ' ') {  // json.dump's separator
        p += 2;
        continue;
      }
      p = Space(p);
      if (buf_[p] == ']') return p + 1;
      if (buf_[p] != ',') Unexpected(p, "expected ',' or ']' in frame_info");
      p = Space(p + 1);
    }
  }

  // The fast path, for the exact layout json.dump writes: "[o, p, l]" with
  // at most 19 digits for o and 9 for p and l (so nothing can overflow).
  // Appends the frame and returns the offset after ']', or returns 0 when
  // anything differs, and the general
  // ParseTriple then parses (or reports) the same bytes. The sentinel at
  // end_ stops every comparison, so no bounds checks are needed.
  size_t ParseCompactTriple(size_t p, std::vector<FrameInfo>* frames) const {
    const char* s = buf_ + p;
    if (*s != '[') return 0;
    ++s;
    uint64_t offset = 0;
    uint64_t pad = 0;
    uint64_t length = 0;
    if (!CompactDigits(&s, 19, &offset) || s[0] != ',' || s[1] != ' ') return 0;
    s += 2;
    if (!CompactDigits(&s, 9, &pad) || s[0] != ',' || s[1] != ' ') return 0;
    s += 2;
    if (!CompactDigits(&s, 9, &length) || *s != ']') return 0;
    frames->push_back(FrameInfo{offset, static_cast<uint32_t>(pad), static_cast<uint32_t>(length)});
    return static_cast<size_t>(s + 1 - buf_);
  }

  // An integer of 1 to `max_digits` digits without a leading zero.
  static bool CompactDigits(const char** s, int max_digits, uint64_t* value) {
    const char* q = *s;
    if (!IsDigit(*q)) return false;
    uint64_t v = static_cast<uint64_t>(*q - '0');
    ++q;
    if (v != 0) {
      for (int n = 1; IsDigit(*q); ++n, ++q) {
        if (n == max_digits) return false;
        v = v * 10 + static_cast<uint64_t>(*q - '0');
      }
    }
    if (IsDigit(*q)) return false;
    *s = q;
    *value = v;
    return true;
  }

  // Any layout JSON allows, with a precise error for anything wrong.
  size_t ParseTriple(size_t p, std::vector<FrameInfo>* frames) const {
    const size_t index = frames->size();
    FrameInfo frame;
    if (buf_[p] != '[') Unexpected(p, FrameLabel(index) + " must be a list [offset, pad, length]");
    p = Space(p + 1);
    frame.offset = ParseUint(&p, std::numeric_limits<uint64_t>::max(), index, "offset");
    p = NextNumber(p, index, 1);
    frame.pad =
        static_cast<uint32_t>(ParseUint(&p, std::numeric_limits<uint32_t>::max(), index, "pad"));
    p = NextNumber(p, index, 2);
    frame.length =
        static_cast<uint32_t>(ParseUint(&p, std::numeric_limits<uint32_t>::max(), index, "length"));
    p = Space(p);
    if (buf_[p] != ']') {
      if (buf_[p] == ',') EntryFail(p, FrameLabel(index) + " has more than 3 numbers");
      Unexpected(p, FrameLabel(index) + " expected ']'");
    }
    frames->push_back(frame);
    return p + 1;
  }

  static std::string FrameLabel(size_t index) {
    return "frame_info[" + std::to_string(index) + "]";
  }

  // After number `count` (1 or 2) of a triple: the ',' before the next one.
  size_t NextNumber(size_t p, size_t index, int count) const {
    p = Space(p);
    if (buf_[p] != ',') {
      if (buf_[p] == ']') {
        EntryFail(p, FrameLabel(index) + " has " + std::to_string(count) +
                         (count == 1 ? " number" : " numbers") +
                         ", expected 3 [offset, pad, length]");
      }
      Unexpected(p, FrameLabel(index) + " expected ','");
    }
    return Space(p + 1);
  }

  // A non-negative JSON integer no greater than `max`, without leading zeros
  // (Python's grammar), and neither a fraction nor an exponent.
  uint64_t ParseUint(size_t* pos, uint64_t max, size_t index, const char* field) const {
    size_t p = *pos;
    const size_t start = p;
    char c = buf_[p];
    if (!IsDigit(c)) {
      if (c == '-') NumberFail(start, index, field, " is negative");
      Unexpected(p, FrameLabel(index) + " " + field + " must be a non-negative integer");
    }
    uint64_t value = 0;
    if (c == '0') {
      c = buf_[++p];
      if (IsDigit(c)) NumberFail(start, index, field, ": leading zeros are not allowed");
    } else {
      // Up to 19 digits cannot overflow 64 bits, so the exact check is only
      // needed from the 20th digit on.
      size_t digits = 0;
      do {
        const auto digit = static_cast<uint64_t>(c - '0');
        if (digits >= 19 &&
            (digits >= 20 || value > (std::numeric_limits<uint64_t>::max() - digit) / 10)) {
          NumberFail(start, index, field, TooBig(max));
        }
        value = value * 10 + digit;
        ++digits;
        c = buf_[++p];
      } while (IsDigit(c));
    }
    if (p >= end_) throw NeedMoreInput{};  // the number may go on
    if (c == '.' || c == 'e' || c == 'E') NumberFail(start, index, field, " must be an integer");
    if (value > max) NumberFail(start, index, field, TooBig(max));
    *pos = p;
    return value;
  }

  static std::string TooBig(uint64_t max) {
    return " is too big (the maximum is " + std::to_string(max) + ")";
  }

  [[noreturn]] void NumberFail(size_t start, size_t index, const char* field,
                               const std::string& what) const {
    EntryFail(start, FrameLabel(index) + " " + field + what);
  }

  const std::string& path_;    // the reader's, for messages
  const char* buf_ = nullptr;  // the buffered bytes, then the sentinel
  size_t end_ = 0;
  uint64_t base_ = 0;                    // file offset of buf_[0]
  std::string key_;                      // scratch for entry keys
  const GmetaEntry* current_ = nullptr;  // the entry being parsed, for messages
  bool id_known_ = false;                // whether current_->id is complete
};

}  // namespace

// ---------------------------------------------------------------------------
// Reader

class GmetaReader::Impl {
 public:
  Impl(const std::string& path, const GmetaReadOptions& options) : path_(path) {
    fd_ = util::OpenFile(path, O_RDONLY);
    // Advice only: a failure changes nothing but read-ahead.
    (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    // A small file needs no more than its size (GulpIO directories can hold
    // thousands of small .gmeta files); the buffer still grows if it grows.
    const uint64_t size_hint = util::FileSize(fd_.get(), path) + 1;
    capacity_ = static_cast<size_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(options.block_size, size_hint)));
    buf_.resize(capacity_ + 1);
    buf_[0] = kSentinel;
  }
  // entry_ refers to path_: an Impl stays where it was made.
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  const std::string& path() const { return path_; }
  const GmetaContent& content() const { return content_; }

  bool Next(GmetaEntry* entry) {
    for (;;) {
      switch (state_) {
        case State::kBeforeOpen:
          if (!SkipSpace()) {
            FailAtEnd(base_ + end_ == 0 ? "empty file, expected a JSON object"
                                        : "expected '{' (a .gmeta file is one JSON object)");
          }
          if (base_ + pos_ == 0 && buf_[pos_] == '\xef') {
            Fail(0, "a UTF-8 byte order mark is not allowed");
          }
          if (buf_[pos_] != '{') {
            Fail(base_ + pos_, "expected '{' (a .gmeta file is one JSON object), found " +
                                   DescribeChar(buf_[pos_]));
          }
          ++pos_;
          state_ = State::kAfterOpen;
          break;
        case State::kAfterOpen:
          if (!SkipSpace()) FailAtEnd("expected an id or '}'");
          if (buf_[pos_] == '}') {
            ++pos_;
            state_ = State::kTrailing;
          } else {
            state_ = State::kEntry;
          }
          break;
        case State::kBeforeId:
          if (!SkipSpace()) FailAtEnd("expected an id after ','");
          state_ = State::kEntry;
          break;
        case State::kEntry:
          if (buf_[pos_] != '"') {
            Fail(base_ + pos_, "expected an id (a JSON string), found " + DescribeChar(buf_[pos_]));
          }
          ParseEntryRefilling(entry);
          state_ = State::kAfterEntry;
          return true;
        case State::kAfterEntry:
          if (!SkipSpace()) FailAtEnd("expected ',' or '}' after an entry");
          if (buf_[pos_] == ',') {
            state_ = State::kBeforeId;
          } else if (buf_[pos_] == '}') {
            state_ = State::kTrailing;
          } else {
            Fail(base_ + pos_,
                 "expected ',' or '}' after an entry, found " + DescribeChar(buf_[pos_]));
          }
          ++pos_;
          break;
        case State::kTrailing:
          if (SkipSpace()) {
            Fail(base_ + pos_,
                 "unexpected " + DescribeChar(buf_[pos_]) + " after the end of the JSON object");
          }
          state_ = State::kDone;
          return false;
        case State::kDone:
          return false;
      }
    }
  }

 private:
  enum class State { kBeforeOpen, kAfterOpen, kBeforeId, kEntry, kAfterEntry, kTrailing, kDone };

  // Always stored at buf_[end_]. It matches nothing the parser looks for (no
  // digit, space or punctuation), so scanning loops stop at the end of the
  // buffered bytes without a bounds check; only where a byte fails to match
  // does the parser ask whether it is the sentinel (more input needed) or a
  // real byte (corruption).
  static constexpr char kSentinel = '\0';

  [[noreturn]] void Fail(uint64_t offset, const std::string& what) const {
    FailAt(path_, offset, what);
  }
  [[noreturn]] void FailAtEnd(const std::string& what) const {
    Fail(base_ + end_, "unexpected end of file (truncated?): " + what);
  }

  // Moves the unconsumed bytes [pos_, end_) to the front, then reads more,
  // doubling the buffer when those bytes fill it. Sets eof_ when read(2)
  // returns nothing.
  void Refill() {
    const size_t keep = end_ - pos_;
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, keep);
      base_ += pos_;
      pos_ = 0;
      end_ = keep;
    }
    if (end_ == capacity_) {
      capacity_ *= 2;
      buf_.resize(capacity_ + 1);
    }
    // The file layer's pread (fault hooks included); it returns less than
    // asked only at the end of the file.
    const size_t n =
        util::PreadFull(fd_.get(), buf_.data() + end_, capacity_ - end_, base_ + end_, path_);
    if (n == 0) {
      eof_ = true;
    } else {
      content_.crc32c = util::Crc32c(buf_.data() + end_, n, content_.crc32c);
      content_.size += n;
      end_ += n;
    }
    buf_[end_] = kSentinel;
  }

  // Consumes whitespace, reading as needed. Returns whether a byte follows.
  bool SkipSpace() {
    for (;;) {
      while (IsJsonSpace(buf_[pos_])) ++pos_;
      if (pos_ < end_) return true;
      if (eof_) return false;
      Refill();
    }
  }

  void ParseEntryRefilling(GmetaEntry* entry) {
    for (;;) {
      try {
        pos_ = entry_.Parse(buf_.data(), end_, base_, pos_, entry);
        return;
      } catch (const NeedMoreInput&) {
        if (eof_) {
          FailAtEnd("the entry starting at byte " + std::to_string(base_ + pos_) +
                    " is incomplete");
        }
        Refill();
      }
    }
  }

  std::string path_;
  util::UniqueFd fd_;
  std::vector<char> buf_;  // capacity_ bytes of input, then room for the sentinel
  size_t capacity_ = 0;
  size_t pos_ = 0;     // first unconsumed byte in buf_
  size_t end_ = 0;     // one past the last valid byte in buf_; buf_[end_] == kSentinel
  uint64_t base_ = 0;  // file offset of buf_[0]
  bool eof_ = false;
  GmetaContent content_;  // of the bytes read so far
  State state_ = State::kBeforeOpen;
  EntryParser entry_{path_};
};

GmetaReader::GmetaReader(const std::string& path, GmetaReadOptions options)
    : impl_(std::make_unique<Impl>(path, options)) {}
GmetaReader::~GmetaReader() = default;
GmetaReader::GmetaReader(GmetaReader&&) noexcept = default;
GmetaReader& GmetaReader::operator=(GmetaReader&&) noexcept = default;

bool GmetaReader::Next(GmetaEntry* entry) { return impl_->Next(entry); }
const std::string& GmetaReader::path() const { return impl_->path(); }
GmetaContent GmetaReader::content() const { return impl_->content(); }

GmetaContent ReadGmeta(const std::string& path, const std::function<void(GmetaEntry&&)>& on_entry,
                       GmetaReadOptions options) {
  GmetaReader reader(path, options);
  GmetaEntry entry;
  while (reader.Next(&entry)) on_entry(std::move(entry));
  return reader.content();
}

// ---------------------------------------------------------------------------
// Writer

namespace {

// Output is flushed to the file in pieces of about this size.
constexpr size_t kWriteBufferSize = size_t{1} << 20;

void AppendNumber(uint64_t value, std::string* out) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  out->append(digits, static_cast<size_t>(result.ptr - digits));
}

}  // namespace

class GmetaWriter::Impl {
 public:
  // Mode 0666 minus the umask, as Python's open() gives.
  explicit Impl(std::string path) : file_(std::move(path), 0666) {
    buffer_.reserve(kWriteBufferSize + (kWriteBufferSize >> 2));
  }

  void Add(std::string_view id_utf8, const std::vector<FrameInfo>& frame_info,
           std::string_view meta_data_json) {
    CheckUsable("add to");
    if (meta_data_json.empty() || meta_data_json.front() != '[') {
      throw InvalidArgumentError("write gmeta " + path() + ": id " + SafeId(id_utf8) +
                                 ": meta_data must be a JSON list");
    }
    const JsonScanResult r = ScanJsonValue(meta_data_json, 0, /*input_complete=*/true);
    if (r.status != JsonScanStatus::kOk || r.pos != meta_data_json.size()) {
      const std::string what = r.status == JsonScanStatus::kInvalid ? r.error
                               : r.status == JsonScanStatus::kTruncated
                                   ? "unexpected end of the text"
                                   : "unexpected characters after the list";
      throw InvalidArgumentError("write gmeta " + path() + ": id " + SafeId(id_utf8) +
                                 ": meta_data: byte " + std::to_string(r.pos) + ": " + what);
    }
    const size_t old_size = buffer_.size();
    buffer_.append(count_ == 0 ? "{" : ", ");
    try {
      AppendPythonJsonString(id_utf8, &buffer_);
    } catch (const InvalidArgumentError& e) {
      buffer_.resize(old_size);
      throw InvalidArgumentError("write gmeta " + path() + ": id: " + e.what());
    }
    buffer_.append(": {\"frame_info\": [");
    for (size_t i = 0; i < frame_info.size(); ++i) {
      if (i > 0) buffer_.append(", ");
      buffer_.push_back('[');
      AppendNumber(frame_info[i].offset, &buffer_);
      buffer_.append(", ");
      AppendNumber(frame_info[i].pad, &buffer_);
      buffer_.append(", ");
      AppendNumber(frame_info[i].length, &buffer_);
      buffer_.push_back(']');
    }
    buffer_.append("], \"meta_data\": ");
    buffer_.append(meta_data_json);
    buffer_.push_back('}');
    ++count_;
    if (buffer_.size() >= kWriteBufferSize) Flush();
  }

  void Commit() {
    CheckUsable("commit");
    broken_ = true;  // until every step below succeeded
    buffer_.append(count_ == 0 ? "{}" : "}");
    Flush();
    committed_ = true;  // from here on, even if only the directory sync fails
    broken_ = false;
    file_.Commit();
  }

  const std::string& path() const { return file_.path(); }
  const std::string& temp_path() const { return file_.temp_path(); }
  size_t entry_count() const { return count_; }
  const GmetaContent& content() const { return content_; }

 private:
  void CheckUsable(const char* what) const {
    if (committed_) {
      throw InvalidArgumentError("write gmeta " + path() + ": cannot " + what +
                                 " a writer that was committed");
    }
    if (broken_) {
      throw InvalidArgumentError("write gmeta " + path() + ": cannot " + what +
                                 " a writer after a failed write");
    }
  }

  static std::string SafeId(std::string_view id) {
    try {
      return QuoteId(id);
    } catch (const InvalidArgumentError&) {
      return "(invalid UTF-8)";
    }
  }

  void Flush() {
    broken_ = true;  // until the write succeeded
    file_.Append(buffer_);
    broken_ = false;
    content_.crc32c = util::Crc32c(buffer_.data(), buffer_.size(), content_.crc32c);
    content_.size += buffer_.size();
    buffer_.clear();
  }

  util::AtomicFile file_;
  GmetaContent content_;  // of the bytes written so far
  std::string buffer_;
  size_t count_ = 0;
  bool committed_ = false;
  bool broken_ = false;
};

GmetaWriter::GmetaWriter(std::string path) : impl_(std::make_unique<Impl>(std::move(path))) {}
GmetaWriter::~GmetaWriter() = default;
GmetaWriter::GmetaWriter(GmetaWriter&&) noexcept = default;
GmetaWriter& GmetaWriter::operator=(GmetaWriter&&) noexcept = default;

void GmetaWriter::Add(std::string_view id_utf8, const std::vector<FrameInfo>& frame_info,
                      std::string_view meta_data_json) {
  impl_->Add(id_utf8, frame_info, meta_data_json);
}
void GmetaWriter::Commit() { impl_->Commit(); }
const std::string& GmetaWriter::path() const { return impl_->path(); }
const std::string& GmetaWriter::temp_path() const { return impl_->temp_path(); }
size_t GmetaWriter::entry_count() const { return impl_->entry_count(); }
GmetaContent GmetaWriter::content() const { return impl_->content(); }

}  // namespace gulpdb::engine
