// Reads the manifest.json of a GulpIO fixture directory (tests/fixtures/
// gulpio*): the ground truth written by a reader independent of gulpdb.
#ifndef GULPDB_TESTS_SUPPORT_MANIFEST_H_
#define GULPDB_TESTS_SUPPORT_MANIFEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gulpdb/types.h"

namespace gulpdb::test {

struct ManifestFrame {
  uint64_t loc = 0;
  uint32_t pad = 0;
  uint32_t length = 0;
  uint64_t jpeg_len = 0;
  std::string jpeg_sha256;
  std::string colorspace;
  std::vector<int> decoded_shape;  // [h, w] for grayscale, [h, w, 3] for colour
  std::string sha_fast;
  std::string sha_accurate;
};

struct ManifestItem {
  std::string id;
  int64_t chunk_id = -1;
  std::vector<FrameInfo> frame_info;
  // The meta_data list in Python's json.dumps form (NaN and big integers as
  // written), cut out of the manifest text and normalised.
  std::string meta_data;
  std::vector<ManifestFrame> frames;
};

struct ManifestChunk {
  int64_t chunk_id = -1;
  std::string data_file;
  std::string meta_file;
  uint64_t data_size = 0;
  std::string data_sha256;
  std::string meta_sha256;
  std::vector<std::string> ids_in_order;
};

struct Manifest {
  std::string dir;
  std::vector<int64_t> glob_sorted_chunk_order;
  std::vector<ManifestChunk> chunks;
  std::vector<ManifestItem> items;

  const ManifestChunk& chunk(int64_t chunk_id) const;
  size_t frame_count() const;
};

// Throws std::runtime_error if the file is missing or not shaped as expected.
Manifest ReadManifest(const std::string& fixture_dir);
// The fixture directories written by GulpIO programs (tests/fixtures/gulpio*), sorted.
std::vector<std::string> GulpFixtureDirs();

}  // namespace gulpdb::test

#endif  // GULPDB_TESTS_SUPPORT_MANIFEST_H_
