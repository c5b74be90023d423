// Fuzz target: what a bucket (or a shared file system) hands a reader before
// any frame: the manifest (engine/remote/manifest.h), a page of its chunk
// list and the root of a partitioned snapshot (index/partition_root.h).
//
// The input goes through ParseManifest and ParseChunkPage as text (the page
// named by the input's own size and SHA-256, so that only its content is
// judged) and through DecodePartitionRoot and DecodeRootPage (judged against
// the page entry of the root-v3 seed, make_seeds.cc) as bytes, at an aligned
// and a misaligned address. Properties checked:
//   - each returns or throws CorruptionError, nothing else;
//   - an accepted manifest names only keys inside its prefix, serializes to
//     text that parses to the same serialization (a fixed point);
//   - accepted page entries ascend and lie in one page of kChunksPerPage;
//   - an accepted root re-encodes to bytes that decode to the same encoding;
//   - an accepted root page holds the partitions its entry says, and
//     re-encodes to itself.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/remote/manifest.h"
#include "gulpdb/error.h"
#include "index/partition_root.h"
#include "tests/fuzz/fuzz_util.h"
#include "util/sha256.h"

namespace {

namespace engine = gulpdb::engine;
namespace index = gulpdb::index;

constexpr const char* kTarget = "published";

bool InsidePrefix(const std::string& key) {
  if (key.empty() || key.front() == '/' || key.back() == '/') return false;
  size_t begin = 0;
  while (begin <= key.size()) {
    const size_t end = std::min(key.find('/', begin), key.size());
    const std::string segment = key.substr(begin, end - begin);
    if (segment.empty() || segment == "." || segment == "..") return false;
    begin = end + 1;
  }
  return true;
}

void CheckEntries(const std::vector<engine::ManifestChunk>& chunks) {
  for (size_t i = 0; i < chunks.size(); ++i) {
    FUZZ_CHECK(kTarget, InsidePrefix(chunks[i].key), "a chunk key leaves the prefix");
    FUZZ_CHECK(kTarget, chunks[i].gmeta_key.empty() || InsidePrefix(chunks[i].gmeta_key),
               "a .gmeta key leaves the prefix");
    FUZZ_CHECK(kTarget, i == 0 || chunks[i - 1].number < chunks[i].number,
               "chunk numbers do not ascend");
  }
}

void Manifest(std::string_view text) {
  engine::Manifest m;
  try {
    m = engine::ParseManifest(text, "fuzz");
  } catch (const gulpdb::CorruptionError&) {
    return;
  }
  CheckEntries(m.chunks);
  for (const engine::ManifestChunkPage& p : m.chunk_pages) {
    FUZZ_CHECK(kTarget, p.key == engine::ChunkPageKey(p.sha256), "a page key not its hash");
    FUZZ_CHECK(kTarget, p.count >= 1 && p.count <= engine::kChunksPerPage, "a page's count");
  }
  for (const engine::ManifestObsolete& o : m.obsolete) {
    FUZZ_CHECK(kTarget, InsidePrefix(o.key), "an obsolete key leaves the prefix");
  }
  const std::string once = engine::SerializeManifest(m);
  std::string twice;
  try {
    twice = engine::SerializeManifest(engine::ParseManifest(once, "fuzz (serialized)"));
  } catch (const gulpdb::CorruptionError& e) {
    gulpdb::fuzz::Fail(kTarget, std::string("a serialized manifest does not parse: ") + e.what());
  }
  FUZZ_CHECK(kTarget, once == twice, "serializing a parsed manifest is not a fixed point");
}

void Page(std::string_view text) {
  engine::ManifestChunkPage page;
  page.size = text.size();
  page.sha256 = gulpdb::util::Sha256Hex(text);
  page.key = engine::ChunkPageKey(page.sha256);
  // Named as a manifest would name it (the seeds' first numbers and
  // counts): the entries are judged against that.
  for (const uint32_t first : {0u, 300u}) {
    for (const uint32_t count : {1u, 2u, 3u, 256u}) {
      page.first = first;
      page.count = count;
      try {
        const std::vector<engine::ManifestChunk> chunks =
            engine::ParseChunkPage(text, page, "fuzz");
        CheckEntries(chunks);
        FUZZ_CHECK(
            kTarget,
            chunks.size() == count && chunks.front().number == first &&
                chunks.back().number / engine::kChunksPerPage == first / engine::kChunksPerPage,
            "an accepted page is not the one named");
      } catch (const gulpdb::CorruptionError&) {
      }
    }
  }
}

void Root(const uint8_t* data, size_t size, size_t shift) {
  std::vector<uint8_t> copy(size + shift);
  if (size != 0) std::memcpy(copy.data() + shift, data, size);
  const std::string_view bytes(reinterpret_cast<const char*>(copy.data() + shift), size);
  index::PartitionRoot root;
  try {
    root = index::DecodePartitionRoot(bytes, "fuzz");
  } catch (const gulpdb::CorruptionError&) {
    return;
  }
  const std::string once = index::EncodePartitionRoot(root);
  std::string twice;
  try {
    twice = index::EncodePartitionRoot(index::DecodePartitionRoot(once, "fuzz (encoded)"));
  } catch (const gulpdb::CorruptionError& e) {
    gulpdb::fuzz::Fail(kTarget, std::string("an encoded root does not decode: ") + e.what());
  }
  FUZZ_CHECK(kTarget, once == twice, "encoding a decoded root is not a fixed point");
}

void RootPage(const uint8_t* data, size_t size, size_t shift) {
  std::vector<uint8_t> copy(size + shift);
  if (size != 0) std::memcpy(copy.data() + shift, data, size);
  const std::string_view bytes(reinterpret_cast<const char*>(copy.data() + shift), size);
  index::RootPage page;  // as the root-v3 seed names its page
  page.kind = index::PartitionKind::kVideos;
  page.first_key = "a";
  page.last_key = "z";
  page.count = 3;
  page.partitions = 2;
  page.partition_bytes = 2 * 16384;
  page.size = size;
  std::vector<index::PartitionEntry> parts;
  try {
    parts = index::DecodeRootPage(bytes, page, "fuzz");
  } catch (const gulpdb::CorruptionError&) {
    return;
  }
  FUZZ_CHECK(kTarget,
             parts.size() == 2 && parts.front().first_key == "a" && parts.back().last_key == "z",
             "an accepted root page is not the one named");
  for (const index::PartitionEntry& p : parts) {
    FUZZ_CHECK(kTarget, p.kind == page.kind && p.generation == 0 && p.sha256.size() == 64,
               "an accepted root page holds another group");
  }
  const std::string once = index::EncodeRootPage(parts);
  try {
    FUZZ_CHECK(kTarget, index::EncodeRootPage(index::DecodeRootPage(once, page, "fuzz")) == once,
               "encoding a decoded root page is not a fixed point");
  } catch (const gulpdb::CorruptionError& e) {
    gulpdb::fuzz::Fail(kTarget, std::string("an encoded root page does not decode: ") + e.what());
  }
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  const std::string_view text = gulpdb::fuzz::AsText(data, size);
  Manifest(text);
  Page(text);
  Root(data, size, 0);
  Root(data, size, 1);
  RootPage(data, size, 0);
  RootPage(data, size, 1);
  return 0;
}
