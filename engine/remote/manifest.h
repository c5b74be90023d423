// The manifest of a published dataset: the small JSON object, written last by
// every push, that names the index snapshot, each chunk object with its
// committed length, ETag and CRC-32C, the .gmeta objects, and the objects a
// later push may delete once their grace period is over. Readers open the
// dataset a manifest describes and nothing else, so a push that stops
// half-way changes nothing they see. The format is specified in
// docs/format/remote_format.md.
//
// Thread safety: plain value types and pure functions.
#ifndef GULPDB_ENGINE_REMOTE_MANIFEST_H_
#define GULPDB_ENGINE_REMOTE_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gulpdb::engine {

// Object names inside a published dataset's prefix.
inline constexpr const char* kManifestKey = "gulpdb.manifest.json";
// The lease a push holds on the prefix while it runs (publish.cc).
inline constexpr const char* kPushLeaseKey = "gulpdb.push-lease.json";
// User metadata on every object a push writes (S3 x-amz-meta-<name>).
inline constexpr const char* kMetaDataset = "gulpdb-dataset";  // the dataset's UUID
inline constexpr const char* kMetaPush = "gulpdb-push";        // the push's id
// On a data object that replaced one a manifest named: PromiseText() of the
// promise (committed length, CRC-32C) its first bytes were checked against
// before it was uploaded. Readers rely on it (remote_dataset.h).
inline constexpr const char* kMetaPrefix = "gulpdb-prefix";
inline constexpr const char* kManifestHistoryDir = "gulpdb.manifests";  // /<generation>.json
inline constexpr const char* kSnapshotDir = "gulpdb.snapshots";         // /<sha256>.mdb
// A partitioned snapshot (engine/partition/partitions.h): its partitions and
// roots, each named by the SHA-256 of its bytes.
inline constexpr const char* kPartitionDir = "gulpdb.partitions";  // /<sha256>
inline constexpr const char* kRootDir = "gulpdb.roots";            // /<sha256>.root
// A version 3 manifest's chunk list, in pages named by their SHA-256.
inline constexpr const char* kChunkPageDir = "gulpdb.chunk-pages";  // /<sha256>.json
// Published tags (docs/versions.md): one tag object per tag, named by its
// SHA-256, listed by the manifest (ManifestTag).
inline constexpr const char* kTagObjectDir = "gulpdb.tags";  // /<sha256>.json
// The version of the tag objects this gulpdb writes and reads.
inline constexpr uint32_t kTagObjectVersion = 1;
// A tag object larger than this is refused (its message is at most 64 KiB).
inline constexpr uint64_t kMaxTagObjectBytes = uint64_t{16} << 20;
// Where `gulpdb snapshot DIR` publishes, inside the dataset directory.
inline constexpr const char* kLocalSnapshotStore = "gulpdb.snapshot";
// The version a manifest naming a whole snapshot is written with, and the
// one naming a partitioned snapshot's root: a reader that knows only
// version 1 refuses a version 2 manifest ("a newer gulpdb wrote it")
// instead of misreading it. The highest version this gulpdb reads is
// kManifestVersion.
// Version 3 names a partitioned snapshot's root too, and keeps the chunk
// list out of the manifest, in pages (so that the manifest does not grow
// with the dataset).
inline constexpr uint32_t kManifestVersionSnapshot = 1;
inline constexpr uint32_t kManifestVersionPartitioned = 2;
inline constexpr uint32_t kManifestVersionChunkPages = 3;
inline constexpr uint32_t kManifestVersion = kManifestVersionChunkPages;
// A chunk page holds the chunks numbered [k * kChunksPerPage, (k + 1) *
// kChunksPerPage) for one k: appended chunks change only the last pages.
// About 300 B per chunk: a page is at most ~80 kB.
inline constexpr uint32_t kChunksPerPage = 256;
// A page larger than this is refused (keys of up to 1 KiB each).
inline constexpr uint64_t kMaxChunkPageBytes = uint64_t{1} << 20;
// A root larger than this is refused (about 10^6 partitions).
inline constexpr uint64_t kMaxRootBytes = uint64_t{256} << 20;
// A manifest larger than this is refused (about 10^6 chunks).
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

// The immutable copy of generation `generation`'s manifest.
std::string ManifestHistoryKey(uint64_t generation);
// The snapshot object of an index whose SHA-256 is `sha256`.
std::string SnapshotKey(const std::string& sha256);
// The object of the partition / the root whose SHA-256 is `sha256`.
std::string PartitionKey(const std::string& sha256);
std::string RootKey(const std::string& sha256);
// A page of a two-level (format 3) root: gulpdb.roots/<sha256>.page.
std::string RootPageKey(const std::string& sha256);
std::string ChunkPageKey(const std::string& sha256);
// The object of a published tag whose SHA-256 is `sha256`.
std::string TagObjectKey(const std::string& sha256);

struct ManifestChunk {
  uint32_t number = 0;
  std::string key;  // the chunk's data object (its file name in the dataset)
  uint64_t committed_length = 0;
  uint32_t live_videos = 0;
  uint64_t live_bytes = 0;
  // Of the data object as uploaded; empty in a local snapshot's manifest,
  // whose chunks are the dataset's own files.
  std::string etag;
  // CRC-32C of the object's bytes [0, committed_length), when published.
  std::optional<uint32_t> crc32c;
  std::string gmeta_key;  // its .gmeta object; empty when none was published
  std::string gmeta_sha256;
  // The chunk's count of meta edits (ChunkInfo::meta_edits) when its .gmeta
  // was written; absent from the manifest when 0.
  uint64_t meta_edits = 0;
};

// One page of a version 3 manifest's chunk list.
struct ManifestChunkPage {
  uint32_t first = 0;  // the number of its first chunk
  uint32_t count = 0;  // its chunks
  std::string key;     // ChunkPageKey(sha256)
  uint64_t size = 0;
  std::string sha256;
};

// An object no longer named by the newest manifest, kept for readers of
// older ones until `since_unix` + the grace period.
struct ManifestObsolete {
  std::string key;
  int64_t since_unix = 0;
  // For a data object: what older manifests promised about it, so that a
  // push re-using the key within the grace period keeps those bytes.
  uint64_t committed_length = 0;
  std::optional<uint32_t> crc32c;
  std::string gmeta_key;  // the emptied .gmeta deleted with it
};

// What a tag says about itself (what `gulpdb tag URL` lists): the manifest's
// entry for it and its tag object both carry it.
struct TagSummary {
  std::string name;
  int64_t created_ms = 0;
  uint64_t videos = 0;
  uint64_t frames = 0;
  std::string message;
  bool operator==(const TagSummary& o) const {
    return name == o.name && created_ms == o.created_ms && videos == o.videos &&
           frames == o.frames && message == o.message;
  }
};

// A tag the manifest lists: its summary and the tag object (TagObject) that
// says what it reads.
struct ManifestTag : TagSummary {
  std::string root_sha256;  // the tag's partition root
  std::string key;          // TagObjectKey(sha256)
  uint64_t size = 0;
  std::string sha256;
  bool operator==(const ManifestTag& o) const {
    return TagSummary::operator==(o) && key == o.key && size == o.size && sha256 == o.sha256 &&
           root_sha256 == o.root_sha256;
  }
  bool operator!=(const ManifestTag& o) const { return !(*this == o); }
};

struct Manifest {
  uint32_t version = kManifestVersionSnapshot;
  uint64_t generation = 0;
  int64_t created_unix = 0;
  std::string creator;
  // The identity of the dataset published (its index's UUID; empty in a
  // manifest written before gulpdb recorded one), and the id of the push
  // that published this generation (empty in older manifests).
  std::string dataset;
  std::string push_id;
  // True when the chunk objects are in the store (push); false for a local
  // snapshot, whose readers read the dataset's chunk files in place.
  bool chunks_published = true;
  // Version 1: the whole index snapshot. Version 2 (partitioned): empty,
  // and root_* name the root of the partitioned snapshot instead.
  std::string snapshot_key;
  uint64_t snapshot_size = 0;
  std::string snapshot_sha256;  // 64 lowercase hex digits
  std::string root_key;
  uint64_t root_size = 0;
  std::string root_sha256;
  bool partitioned() const { return !root_key.empty(); }
  // What names the index: the root's SHA-256, or the snapshot's.
  const std::string& index_sha256() const { return partitioned() ? root_sha256 : snapshot_sha256; }
  uint64_t videos = 0;
  uint64_t frames = 0;
  // By number. A version 3 manifest lists its chunks in pages instead
  // (chunk_pages; chunk_count of them in all): empty until the pages are
  // read (LoadChunkPages, partition_cache.h).
  std::vector<ManifestChunk> chunks;
  std::vector<ManifestChunkPage> chunk_pages;
  uint64_t chunk_count = 0;
  bool paged() const { return version >= kManifestVersionChunkPages; }
  uint64_t ChunkCount() const { return paged() ? chunk_count : chunks.size(); }
  std::string label2idx_key;  // empty when the dataset has none
  std::string label2idx_sha256;
  int64_t grace_seconds = 0;
  std::vector<ManifestObsolete> obsolete;
  // The published tags, by name (absent from the text when there is none).
  std::vector<ManifestTag> tags;
};

// A published tag's object (kTagObjectDir/<sha256>.json): the tag's summary,
// its partition root and its chunk list in pages, as a version 3 manifest
// names them. Its chunk entries carry no ETag, CRC or .gmeta hash (the
// object does not change when a push replaces a grown chunk object), and the
// committed length the tag reads of each chunk.
struct TagObject : TagSummary {
  std::string root_key;
  uint64_t root_size = 0;
  std::string root_sha256;
  uint64_t chunk_count = 0;
  std::vector<ManifestChunkPage> chunk_pages;
};

// The tag object as JSON text (keys in a fixed order: the same tag is the
// same bytes, so a push that finds it published sends nothing).
std::string SerializeTagObject(const TagObject& tag);
// Parses and checks a tag object (its version, keys inside the prefix, the
// root's key the name of its SHA-256). Throws CorruptionError "read tag
// <where>: ...".
TagObject ParseTagObject(std::string_view text, const std::string& where);

// The push lease (kPushLeaseKey): which push holds the prefix, until when.
struct PushLeaseRecord {
  std::string push_id;
  std::string dataset;  // the pushed dataset's UUID
  std::string host;
  int64_t pid = 0;
  int64_t started_unix = 0;
  int64_t expires_unix = 0;  // renewed while the push runs
};

std::string SerializePushLease(const PushLeaseRecord& lease);
// CorruptionError "read push lease <where>: ..." for text that is not a lease.
PushLeaseRecord ParsePushLease(std::string_view text, const std::string& where);

// The manifest as JSON text (one object, keys in a fixed order).
std::string SerializeManifest(const Manifest& manifest);

// The pages of `chunks` (sorted by number) and their text, for a version 3
// manifest: each page's entries serialized as a manifest lists them, named
// by its SHA-256, so that an unchanged page keeps its key.
struct ChunkPageText {
  ManifestChunkPage page;
  std::string text;
};
std::vector<ChunkPageText> MakeChunkPages(const std::vector<ManifestChunk>& chunks);

// Parses and checks the text of `page` (its size and SHA-256 included).
// Throws CorruptionError "read chunk page <where>: ..." naming what is wrong,
// as ParseManifest does for the entries of a manifest.
std::vector<ManifestChunk> ParseChunkPage(std::string_view text, const ManifestChunkPage& page,
                                          const std::string& where);

// Parses and checks a manifest. `where` names it in errors. Throws
// CorruptionError "read manifest <where>: <what is wrong>" for anything that
// is not a manifest this version understands: malformed JSON, missing or
// mistyped fields, keys that could leave the prefix, chunk numbers out of
// order, a snapshot hash that is not 64 hex digits, or a newer version.
Manifest ParseManifest(std::string_view text, const std::string& where);

// UTC "YYYY-MM-DDTHH:MM:SSZ".
std::string IsoTime(int64_t unix_seconds);

// "<length>-<crc32c as 8 lowercase hex digits>": the value of kMetaPrefix.
std::string PromiseText(uint64_t length, uint32_t crc32c);

// True for a UUID as gulpdb writes them (36 characters: lowercase hex
// digits in groups of 8-4-4-4-12 separated by '-').
bool IsUuid(std::string_view text);

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_REMOTE_MANIFEST_H_
