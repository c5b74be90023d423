#include "engine/remote/manifest.h"

#include <simdjson.h>

#include <cstdio>
#include <ctime>

#include "engine/json/json_text.h"
#include "engine/json/json_writer.h"
#include "gulpdb/error.h"
#include "s3/s3_url.h"
#include "util/hex.h"
#include "util/sha256.h"

namespace gulpdb::engine {
namespace {

constexpr const char* kFormatName = "gulpdb-manifest";
constexpr const char* kLeaseFormatName = "gulpdb-push-lease";
constexpr const char* kChunkPageFormatName = "gulpdb-chunk-page";
constexpr const char* kTagFormatName = "gulpdb-tag";

// `text` parsed by `parser` (whose buffers the element lives in), or a
// CorruptionError "<operation><where>: not valid JSON (...)".
simdjson::dom::element ParseText(simdjson::dom::parser* parser, std::string_view text,
                                 const std::string& operation, const std::string& where) {
  simdjson::dom::element root;
  if (const auto error = parser->parse(text.data(), text.size()).get(root); error) {
    throw CorruptionError(operation + where + ": not valid JSON (" +
                          simdjson::error_message(error) + ")");
  }
  return root;
}

// The text of one JSON object that `write` fills in, and a newline.
template <typename Fn>
std::string ObjectText(const Fn& write) {
  std::string out;
  JsonObjectWriter w(&out);
  write(w);
  w.Close();
  out += "\n";
  return out;
}

// "crc32c": the CRC-32C, or null when none is known.
void Crc(JsonObjectWriter& w, const std::optional<uint32_t>& crc) {
  if (crc) {
    w.Number("crc32c", *crc);
  } else {
    w.Null("crc32c");
  }
}

// A list of objects, one a line: `[\n  {...},\n  {...}]`; `write` writes
// the members of element i.
template <typename Fn>
void AppendObjectLines(std::string* out, size_t n, const Fn& write) {
  *out += "[";
  for (size_t i = 0; i < n; ++i) {
    *out += i == 0 ? "\n  " : ",\n  ";
    JsonObjectWriter element(out);
    write(element, i);
    element.Close();
  }
  *out += "]";
}

// Reads fields of one JSON object with type checks; every failure names the
// manifest and the field.
class Fields {
 public:
  Fields(simdjson::dom::element element, std::string what, const std::string& where,
         const char* operation = "read manifest ")
      : what_(std::move(what)), where_(where), operation_(operation) {
    if (element.get(object_) != simdjson::SUCCESS) Fail("is not a JSON object");
  }

  simdjson::dom::element Raw(const char* name, bool required = true) const {
    simdjson::dom::element e;
    if (object_.at_key(name).get(e) != simdjson::SUCCESS) {
      if (required) Fail("has no \"" + std::string(name) + "\"");
      return {};
    }
    return e;
  }
  bool Has(const char* name) const {
    simdjson::dom::element e;
    return object_.at_key(name).get(e) == simdjson::SUCCESS && !e.is_null();
  }
  std::string String(const char* name, bool required = true) const {
    if (!required && !Has(name)) return "";
    std::string_view v;
    if (Raw(name).get(v) != simdjson::SUCCESS)
      Fail("\"" + std::string(name) + "\" is not a string");
    return std::string(v);
  }
  uint64_t Unsigned(const char* name) const {
    uint64_t v = 0;
    if (Raw(name).get(v) != simdjson::SUCCESS) {
      Fail("\"" + std::string(name) + "\" is not a whole number >= 0");
    }
    return v;
  }
  int64_t Signed(const char* name) const {
    int64_t v = 0;
    if (Raw(name).get(v) != simdjson::SUCCESS) {
      Fail("\"" + std::string(name) + "\" is not a whole number");
    }
    return v;
  }
  uint32_t Unsigned32(const char* name) const {
    const uint64_t v = Unsigned(name);
    if (v > UINT32_MAX) Fail("\"" + std::string(name) + "\" is larger than 2^32 - 1");
    return static_cast<uint32_t>(v);
  }
  std::optional<uint32_t> OptionalUnsigned32(const char* name) const {
    if (!Has(name)) return std::nullopt;
    return Unsigned32(name);
  }
  bool Bool(const char* name) const {
    bool v = false;
    if (Raw(name).get(v) != simdjson::SUCCESS) Fail("\"" + std::string(name) + "\" is not a bool");
    return v;
  }
  simdjson::dom::array Array(const char* name) const {
    simdjson::dom::array a;
    if (Raw(name).get(a) != simdjson::SUCCESS) Fail("\"" + std::string(name) + "\" is not a list");
    return a;
  }
  // A key relative to the dataset's prefix: '/'-separated, no empty, "." or
  // ".." segment (a manifest must not point outside its prefix).
  std::string Key(const char* name, bool required = true) const {
    std::string key = String(name, required);
    if (key.empty() && !required) return key;
    try {
      remote::JoinKey("", key);
    } catch (const InvalidArgumentError& e) {
      Fail("\"" + std::string(name) + "\" is not a key inside the dataset: " + e.what());
    }
    return key;
  }

  [[noreturn]] void Fail(const std::string& detail) const {
    throw CorruptionError(operation_ + where_ + ": " + what_ + " " + detail);
  }

 private:
  simdjson::dom::object object_;
  std::string what_;
  const std::string& where_;
  std::string operation_;
};

// The chunk entries of a manifest or a chunk page, as a JSON list.
void AppendChunkList(std::string* out, const ManifestChunk* chunks, size_t n) {
  AppendObjectLines(out, n, [&](JsonObjectWriter& w, size_t i) {
    const ManifestChunk& c = chunks[i];
    w.Number("number", c.number)
        .String("key", c.key)
        .Number("committed_length", c.committed_length)
        .Number("live_videos", c.live_videos)
        .Number("live_bytes", c.live_bytes)
        .String("etag", c.etag);
    Crc(w, c.crc32c);
    w.String("gmeta_key", c.gmeta_key).String("gmeta_sha256", c.gmeta_sha256);
    // Absent when 0: a manifest of an unedited dataset keeps its bytes.
    if (c.meta_edits != 0) w.Number("meta_edits", c.meta_edits);
  });
}

// The entries of the "chunks" list of `top`, numbers ascending.
std::vector<ManifestChunk> ParseChunkList(const Fields& top, const std::string& where,
                                          const char* operation) {
  std::vector<ManifestChunk> chunks;
  size_t index = 0;
  for (simdjson::dom::element e : top.Array("chunks")) {
    const Fields f(e, "chunk entry " + std::to_string(index++), where, operation);
    ManifestChunk c;
    c.number = f.Unsigned32("number");
    if (!chunks.empty() && c.number <= chunks.back().number) {
      f.Fail("has number " + std::to_string(c.number) + ", not after the previous entry's " +
             std::to_string(chunks.back().number));
    }
    c.key = f.Key("key");
    c.committed_length = f.Unsigned("committed_length");
    c.live_videos = f.Unsigned32("live_videos");
    c.live_bytes = f.Unsigned("live_bytes");
    c.etag = f.String("etag");
    c.crc32c = f.OptionalUnsigned32("crc32c");
    c.gmeta_key = f.Key("gmeta_key", false);
    c.gmeta_sha256 = f.String("gmeta_sha256", false);
    if (f.Has("meta_edits")) c.meta_edits = f.Unsigned("meta_edits");
    chunks.push_back(std::move(c));
  }
  return chunks;
}

// The "chunk_pages" member of a version 3 manifest or a tag object, after
// "chunk_count" on a line of its own.
void ChunkPages(JsonObjectWriter& w, uint64_t chunk_count,
                const std::vector<ManifestChunkPage>& pages) {
  w.Break().Number("chunk_count", chunk_count).Break();
  AppendObjectLines(&w.Key("chunk_pages"), pages.size(), [&](JsonObjectWriter& page, size_t i) {
    const ManifestChunkPage& p = pages[i];
    page.Number("first", p.first)
        .Number("count", p.count)
        .String("key", p.key)
        .Number("size", p.size)
        .String("sha256", p.sha256);
  });
}

// The "chunk_pages" of `top`, checked: each page's key its SHA-256's name,
// pages in order, their counts adding up to `chunk_count`.
std::vector<ManifestChunkPage> ParseChunkPages(const Fields& top, const std::string& where,
                                               const char* operation, uint64_t chunk_count) {
  std::vector<ManifestChunkPage> pages;
  uint64_t listed = 0;
  size_t i = 0;
  for (simdjson::dom::element e : top.Array("chunk_pages")) {
    const Fields f(e, "chunk page " + std::to_string(i++), where, operation);
    ManifestChunkPage p;
    p.first = f.Unsigned32("first");
    p.count = f.Unsigned32("count");
    p.key = f.Key("key");
    p.size = f.Unsigned("size");
    p.sha256 = f.String("sha256");
    if (!util::IsSha256Hex(p.sha256)) f.Fail("\"sha256\" is not 64 lowercase hex digits");
    if (p.key != ChunkPageKey(p.sha256)) f.Fail("\"key\" is not the page's name for its SHA-256");
    if (p.count == 0 || p.count > kChunksPerPage || p.size == 0 || p.size > kMaxChunkPageBytes) {
      f.Fail("holds " + std::to_string(p.count) + " chunks in " + std::to_string(p.size) +
             " bytes, not what a page may");
    }
    if (!pages.empty() && p.first / kChunksPerPage <= pages.back().first / kChunksPerPage) {
      f.Fail("starts at chunk " + std::to_string(p.first) + ", not in a page after the previous");
    }
    listed += p.count;
    pages.push_back(std::move(p));
  }
  if (listed != chunk_count) {
    top.Fail("gives \"chunk_count\" " + std::to_string(chunk_count) + ", its pages hold " +
             std::to_string(listed));
  }
  return pages;
}

// The summary members a manifest's tag entry and a tag object share (the
// root follows, in each its own way).
JsonObjectWriter& WriteTagSummary(JsonObjectWriter& w, const TagSummary& t) {
  return w.String("name", t.name)
      .Number("created_ms", t.created_ms)
      .Number("videos", t.videos)
      .Number("frames", t.frames)
      .String("message", t.message);
}

TagSummary ReadTagSummary(const Fields& f) {
  TagSummary t;
  t.name = f.String("name");
  t.created_ms = f.Signed("created_ms");
  t.videos = f.Unsigned("videos");
  t.frames = f.Unsigned("frames");
  t.message = f.String("message");
  return t;
}

// A SHA-256 member: 64 lowercase hex digits.
std::string Sha256Member(const Fields& f, const char* name) {
  std::string sha = f.String(name);
  if (!util::IsSha256Hex(sha))
    f.Fail("\"" + std::string(name) + "\" is not 64 lowercase hex digits");
  return sha;
}

}  // namespace

std::string ManifestHistoryKey(uint64_t generation) {
  char name[32];
  std::snprintf(name, sizeof(name), "%020llu", static_cast<unsigned long long>(generation));
  return std::string(kManifestHistoryDir) + "/" + name + ".json";
}

std::string SnapshotKey(const std::string& sha256) {
  return std::string(kSnapshotDir) + "/" + sha256 + ".mdb";
}

std::string PartitionKey(const std::string& sha256) {
  return std::string(kPartitionDir) + "/" + sha256;
}

std::string RootKey(const std::string& sha256) {
  return std::string(kRootDir) + "/" + sha256 + ".root";
}

std::string RootPageKey(const std::string& sha256) {
  return std::string(kRootDir) + "/" + sha256 + ".page";
}

std::string ChunkPageKey(const std::string& sha256) {
  return std::string(kChunkPageDir) + "/" + sha256 + ".json";
}

std::string TagObjectKey(const std::string& sha256) {
  return std::string(kTagObjectDir) + "/" + sha256 + ".json";
}

std::vector<ChunkPageText> MakeChunkPages(const std::vector<ManifestChunk>& chunks) {
  std::vector<ChunkPageText> pages;
  for (size_t begin = 0; begin < chunks.size();) {
    const uint32_t page = chunks[begin].number / kChunksPerPage;
    size_t end = begin;
    while (end < chunks.size() && chunks[end].number / kChunksPerPage == page) ++end;
    ChunkPageText t;
    t.text = ObjectText([&](JsonObjectWriter& w) {
      w.String("format", kChunkPageFormatName).Break();
      AppendChunkList(&w.Key("chunks"), chunks.data() + begin, end - begin);
    });
    t.page.first = chunks[begin].number;
    t.page.count = static_cast<uint32_t>(end - begin);
    t.page.size = t.text.size();
    t.page.sha256 = util::Sha256Hex(t.text);
    t.page.key = ChunkPageKey(t.page.sha256);
    pages.push_back(std::move(t));
    begin = end;
  }
  return pages;
}

std::vector<ManifestChunk> ParseChunkPage(std::string_view text, const ManifestChunkPage& page,
                                          const std::string& where) {
  const char* operation = "read chunk page ";
  const std::string sha = util::Sha256Hex(text);
  if (text.size() != page.size || sha != page.sha256) {
    throw CorruptionError(operation + where + ": " + std::to_string(text.size()) +
                          " bytes with SHA-256 " + sha + ", the manifest says " +
                          std::to_string(page.size) + " bytes, " + page.sha256 +
                          ": it was replaced behind the manifest's back");
  }
  simdjson::dom::parser parser;
  const simdjson::dom::element root = ParseText(&parser, text, operation, where);
  const Fields top(root, "the page", where, operation);
  if (top.String("format") != kChunkPageFormatName) {
    top.Fail("is not a gulpdb chunk page (\"format\")");
  }
  std::vector<ManifestChunk> chunks = ParseChunkList(top, where, operation);
  if (chunks.size() != page.count || chunks.empty() || chunks.front().number != page.first ||
      chunks.back().number / kChunksPerPage != page.first / kChunksPerPage) {
    top.Fail("holds " + std::to_string(chunks.size()) + " chunks from number " +
             (chunks.empty() ? std::string("-") : std::to_string(chunks.front().number)) +
             ", not the " + std::to_string(page.count) + " from " + std::to_string(page.first) +
             " of one page that the manifest gives");
  }
  return chunks;
}

std::string PromiseText(uint64_t length, uint32_t crc32c) {
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08x", crc32c);
  return std::to_string(length) + "-" + hex;
}

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!util::IsLowerHexDigit(c)) {
      return false;
    }
  }
  return true;
}

std::string IsoTime(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

namespace {

// A time is written twice: NAME in ISO-8601 UTC for people, NAME_unix in
// seconds for programs; the readers here read NAME_unix only.
JsonObjectWriter& Time(JsonObjectWriter& w, std::string_view name, int64_t unix_seconds) {
  return w.String(name, IsoTime(unix_seconds)).Number(std::string(name) + "_unix", unix_seconds);
}

}  // namespace

std::string SerializeManifest(const Manifest& m) {
  return ObjectText([&](JsonObjectWriter& w) {
    w.String("format", kFormatName).Number("version", m.version).Number("generation", m.generation);
    Time(w, "created", m.created_unix).String("creator", m.creator);
    if (!m.dataset.empty()) w.Break().String("dataset", m.dataset);
    if (!m.push_id.empty()) w.String("push", m.push_id);
    w.Break().Bool("chunks_published", m.chunks_published).Break();
    {
      const bool root = m.partitioned();
      JsonObjectWriter index(&w.Key(root ? "root" : "snapshot"));
      index.String("key", root ? m.root_key : m.snapshot_key)
          .Number("size", root ? m.root_size : m.snapshot_size)
          .String("sha256", root ? m.root_sha256 : m.snapshot_sha256)
          .Close();
    }
    w.Break()
        .Number("videos", m.videos)
        .Number("frames", m.frames)
        .Number("grace_seconds", m.grace_seconds)
        .Break();
    if (m.label2idx_key.empty()) {
      w.Null("label2idx");
    } else {
      JsonObjectWriter(&w.Key("label2idx"))
          .String("key", m.label2idx_key)
          .String("sha256", m.label2idx_sha256)
          .Close();
    }
    if (m.paged()) {
      ChunkPages(w, m.chunk_count, m.chunk_pages);
    } else {
      AppendChunkList(&w.Break().Key("chunks"), m.chunks.data(), m.chunks.size());
    }
    if (!m.tags.empty()) {  // absent when none: a manifest without tags keeps its bytes
      AppendObjectLines(&w.Break().Key("tags"), m.tags.size(),
                        [&](JsonObjectWriter& entry, size_t i) {
                          const ManifestTag& t = m.tags[i];
                          WriteTagSummary(entry, t)
                              .String("root", t.root_sha256)
                              .String("key", t.key)
                              .Number("size", t.size)
                              .String("sha256", t.sha256);
                        });
    }
    AppendObjectLines(&w.Break().Key("obsolete"), m.obsolete.size(),
                      [&](JsonObjectWriter& entry, size_t i) {
                        const ManifestObsolete& o = m.obsolete[i];
                        Time(entry.String("key", o.key), "since", o.since_unix)
                            .Number("committed_length", o.committed_length);
                        Crc(entry, o.crc32c);
                        entry.String("gmeta_key", o.gmeta_key);
                      });
  });
}

Manifest ParseManifest(std::string_view text, const std::string& where) {
  simdjson::dom::parser parser;
  const simdjson::dom::element root = ParseText(&parser, text, "read manifest ", where);
  const Fields top(root, "the manifest", where);
  if (top.String("format") != kFormatName) top.Fail("is not a gulpdb manifest (\"format\")");
  Manifest m;
  m.version = top.Unsigned32("version");
  if (m.version > kManifestVersion || m.version == 0) {
    top.Fail("has version " + std::to_string(m.version) + "; this gulpdb reads version " +
             std::to_string(kManifestVersion) + " (a newer gulpdb wrote it: upgrade)");
  }
  m.generation = top.Unsigned("generation");
  m.created_unix = top.Signed("created_unix");
  m.creator = top.String("creator");
  m.dataset = top.String("dataset", false);
  if (!m.dataset.empty() && !IsUuid(m.dataset)) top.Fail("\"dataset\" is not a UUID");
  m.push_id = top.String("push", false);
  m.chunks_published = top.Bool("chunks_published");
  if (m.version >= kManifestVersionPartitioned) {
    // A partitioned snapshot: the manifest names its root.
    const Fields index_root(top.Raw("root"), "\"root\"", where);
    m.root_key = index_root.Key("key");
    m.root_size = index_root.Unsigned("size");
    m.root_sha256 = index_root.String("sha256");
    if (!util::IsSha256Hex(m.root_sha256))
      index_root.Fail("\"sha256\" is not 64 lowercase hex digits");
    if (m.root_size > kMaxRootBytes) {
      index_root.Fail("\"size\" is " + std::to_string(m.root_size) +
                      " bytes, more than a root may be");
    }
  } else {
    const Fields snapshot(top.Raw("snapshot"), "\"snapshot\"", where);
    m.snapshot_key = snapshot.Key("key");
    m.snapshot_size = snapshot.Unsigned("size");
    m.snapshot_sha256 = snapshot.String("sha256");
    if (!util::IsSha256Hex(m.snapshot_sha256))
      snapshot.Fail("\"sha256\" is not 64 lowercase hex digits");
  }
  m.videos = top.Unsigned("videos");
  m.frames = top.Unsigned("frames");
  m.grace_seconds = top.Signed("grace_seconds");
  if (top.Has("label2idx")) {
    const Fields labels(top.Raw("label2idx"), "\"label2idx\"", where);
    m.label2idx_key = labels.Key("key");
    m.label2idx_sha256 = labels.String("sha256");
  }
  if (m.paged()) {
    m.chunk_count = top.Unsigned("chunk_count");
    m.chunk_pages = ParseChunkPages(top, where, "read manifest ", m.chunk_count);
  } else {
    m.chunks = ParseChunkList(top, where, "read manifest ");
  }
  size_t index = 0;
  for (simdjson::dom::element e : top.Array("obsolete")) {
    const Fields f(e, "obsolete entry " + std::to_string(index++), where);
    ManifestObsolete o;
    o.key = f.Key("key");
    o.since_unix = f.Signed("since_unix");
    o.committed_length = f.Unsigned("committed_length");
    o.crc32c = f.OptionalUnsigned32("crc32c");
    o.gmeta_key = f.Key("gmeta_key", false);
    m.obsolete.push_back(std::move(o));
  }
  if (top.Has("tags")) {
    index = 0;
    for (simdjson::dom::element e : top.Array("tags")) {
      const Fields f(e, "tag entry " + std::to_string(index++), where);
      ManifestTag t(ReadTagSummary(f));
      t.root_sha256 = Sha256Member(f, "root");
      t.key = f.Key("key");
      t.size = f.Unsigned("size");
      t.sha256 = Sha256Member(f, "sha256");
      if (t.key != TagObjectKey(t.sha256))
        f.Fail("\"key\" is not the tag object's name for its SHA-256");
      if (t.size == 0 || t.size > kMaxTagObjectBytes) {
        f.Fail("gives \"size\" " + std::to_string(t.size) + ", not what a tag object may be");
      }
      if (!m.tags.empty() && t.name <= m.tags.back().name)
        f.Fail("is not after the previous by name");
      m.tags.push_back(std::move(t));
    }
  }
  return m;
}

std::string SerializeTagObject(const TagObject& t) {
  return ObjectText([&](JsonObjectWriter& w) {
    w.String("format", kTagFormatName).Number("version", kTagObjectVersion).Break();
    WriteTagSummary(w, t).Break();
    JsonObjectWriter(&w.Key("root"))
        .String("key", t.root_key)
        .Number("size", t.root_size)
        .String("sha256", t.root_sha256)
        .Close();
    ChunkPages(w, t.chunk_count, t.chunk_pages);
  });
}

TagObject ParseTagObject(std::string_view text, const std::string& where) {
  simdjson::dom::parser parser;
  const char* operation = "read tag ";
  const simdjson::dom::element root = ParseText(&parser, text, operation, where);
  const Fields top(root, "the tag object", where, operation);
  if (top.String("format") != kTagFormatName) top.Fail("is not a gulpdb tag (\"format\")");
  const uint32_t version = top.Unsigned32("version");
  if (version != kTagObjectVersion) {
    top.Fail("has version " + std::to_string(version) + "; this gulpdb reads version " +
             std::to_string(kTagObjectVersion) + " (another gulpdb wrote it)");
  }
  TagObject t(ReadTagSummary(top));
  const Fields r(top.Raw("root"), "\"root\"", where, operation);
  t.root_sha256 = Sha256Member(r, "sha256");
  t.root_key = r.Key("key");
  if (t.root_key != RootKey(t.root_sha256))
    r.Fail("\"key\" is not the root's name for its SHA-256");
  t.root_size = r.Unsigned("size");
  if (t.root_size == 0 || t.root_size > kMaxRootBytes) {
    r.Fail("\"size\" is " + std::to_string(t.root_size) + " bytes, not what a root may be");
  }
  t.chunk_count = top.Unsigned("chunk_count");
  t.chunk_pages = ParseChunkPages(top, where, operation, t.chunk_count);
  return t;
}

std::string SerializePushLease(const PushLeaseRecord& lease) {
  return ObjectText([&](JsonObjectWriter& w) {
    w.String("format", kLeaseFormatName)
        .String("push", lease.push_id)
        .String("dataset", lease.dataset)
        .Break()
        .String("host", lease.host)
        .Number("pid", lease.pid)
        .Break();
    Time(w, "started", lease.started_unix).Break();
    Time(w, "expires", lease.expires_unix);
  });
}

PushLeaseRecord ParsePushLease(std::string_view text, const std::string& where) {
  simdjson::dom::parser parser;
  const simdjson::dom::element root = ParseText(&parser, text, "read push lease ", where);
  const Fields f(root, "the lease", where, "read push lease ");
  if (f.String("format") != kLeaseFormatName) f.Fail("is not a gulpdb push lease (\"format\")");
  PushLeaseRecord lease;
  lease.push_id = f.String("push");
  lease.dataset = f.String("dataset");
  lease.host = f.String("host");
  lease.pid = f.Signed("pid");
  lease.started_unix = f.Signed("started_unix");
  lease.expires_unix = f.Signed("expires_unix");
  return lease;
}

}  // namespace gulpdb::engine
