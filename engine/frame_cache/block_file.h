// One block of the node's frame cache on disk: a header that says which
// bytes of which object it holds, with a CRC-32C of every page of them, then
// the bytes. The format is docs/format/frame_cache_format.md.
//
// A block file is written whole into a temporary file and renamed into
// place, never changed after, and needs no sync: whatever a crash or a power
// cut leaves under the name (nothing, zeros, a torn write) fails the header
// or a page CRC and is fetched again. Every read checks the header against
// what the reader expects (the same identity, offset and length) and the
// CRC-32C of each page it copies out, so a damaged, truncated, foreign or
// stale file is never served.
//
// Thread safety: pure functions, and reads through a descriptor the caller
// owns.
#ifndef GULPDB_ENGINE_FRAME_CACHE_BLOCK_FILE_H_
#define GULPDB_ENGINE_FRAME_CACHE_BLOCK_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gulpdb::engine {

// What a block holds: `length` bytes at `offset` of the object whose
// identity hashes (with the block size and number) to `name` (64 hex digits).
struct BlockId {
  std::string name;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Bytes of data covered by one page CRC.
inline constexpr uint32_t kBlockPageBytes = 16 * 1024;

// The size of the header of a block of `length` bytes.
uint64_t BlockHeaderSize(uint64_t length);

// The header of block `id` whose bytes are `data` (data.size() == id.length).
std::string EncodeBlockHeader(const BlockId& id, std::string_view data);

// Copies `size` bytes at `offset` (relative to the block's first byte) of
// the block file open as `fd` into `out`, after checking its header against
// `id`, its size (`file_size`) and the CRC-32C of every page the bytes lie
// in. Returns "" on success, else what is wrong (nothing is copied then, or
// `out` holds bytes that must not be used). Never throws.
std::string ReadBlockBytes(int fd, uint64_t file_size, const BlockId& id, uint64_t offset,
                           uint64_t size, char* out) noexcept;

}  // namespace gulpdb::engine

#endif  // GULPDB_ENGINE_FRAME_CACHE_BLOCK_FILE_H_
