#include "support/manifest.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "engine/json/json_text.h"
#include "support/test_util.h"

namespace gulpdb::test {
namespace {

namespace od = simdjson::ondemand;

std::string Str(od::value v) { return std::string(std::string_view(v.get_string())); }

// The text of the value after each `"meta_data": ` key, in file order. The
// manifest keeps NaN and Infinity as Python writes them, which simdjson
// rejects, so the values are cut out of the text with the engine's
// Python-dialect scanner and normalised.
std::vector<std::string> MetaDataTexts(const std::string& text) {
  std::vector<std::string> out;
  const std::string key = "\"meta_data\": ";
  for (size_t pos = text.find(key); pos != std::string::npos; pos = text.find(key, pos)) {
    pos += key.size();
    const engine::JsonScanResult r = engine::ScanJsonValue(text, pos, true);
    if (r.status != engine::JsonScanStatus::kOk)
      throw std::runtime_error("bad meta_data in manifest");
    out.push_back(engine::NormalizeJson(std::string_view(text).substr(pos, r.pos - pos)));
    pos = r.pos;
  }
  return out;
}

}  // namespace

const ManifestChunk& Manifest::chunk(int64_t chunk_id) const {
  for (const ManifestChunk& c : chunks) {
    if (c.chunk_id == chunk_id) return c;
  }
  throw std::runtime_error("manifest of " + dir + " has no chunk " + std::to_string(chunk_id));
}

size_t Manifest::frame_count() const {
  size_t n = 0;
  for (const ManifestItem& item : items) n += item.frame_info.size();
  return n;
}

Manifest ReadManifest(const std::string& fixture_dir) {
  const std::string path = fixture_dir + "/manifest.json";
  const std::string text = ReadFile(path);
  Manifest m;
  m.dir = fixture_dir;
  simdjson::padded_string json(text);
  od::parser parser;
  od::document doc = parser.iterate(json);
  // Fields are taken by name as they come; every other value (notably
  // meta_data) is skipped by On-Demand without being parsed.
  for (od::field top : doc.get_object()) {
    const std::string_view top_key = top.unescaped_key();
    if (top_key == "glob_sorted_chunk_order") {
      for (int64_t n : top.value().get_array()) m.glob_sorted_chunk_order.push_back(n);
    } else if (top_key == "chunks") {
      for (od::object chunk : top.value().get_array()) {
        ManifestChunk c;
        for (od::field f : chunk) {
          const std::string_view k = f.unescaped_key();
          if (k == "chunk_id") c.chunk_id = f.value().get_int64();
          if (k == "data_file") c.data_file = Str(f.value());
          if (k == "meta_file") c.meta_file = Str(f.value());
          if (k == "data_size") c.data_size = f.value().get_uint64();
          if (k == "data_sha256") c.data_sha256 = Str(f.value());
          if (k == "meta_sha256") c.meta_sha256 = Str(f.value());
          if (k == "ids_in_order") {
            for (od::value id : f.value().get_array()) c.ids_in_order.push_back(Str(id));
          }
        }
        m.chunks.push_back(std::move(c));
      }
    } else if (top_key == "items") {
      for (od::object item_json : top.value().get_array()) {
        ManifestItem item;
        for (od::field f : item_json) {
          const std::string_view k = f.unescaped_key();
          if (k == "id") {
            item.id = Str(f.value());
          } else if (k == "chunk_id") {
            item.chunk_id = f.value().get_int64();
          } else if (k == "frame_info") {
            for (od::array triple : f.value().get_array()) {
              std::vector<uint64_t> v;
              for (uint64_t x : triple) v.push_back(x);
              if (v.size() != 3) throw std::runtime_error("bad frame_info in " + path);
              item.frame_info.push_back(
                  FrameInfo{v[0], static_cast<uint32_t>(v[1]), static_cast<uint32_t>(v[2])});
            }
          } else if (k == "frames") {
            for (od::object frame_json : f.value().get_array()) {
              ManifestFrame frame;
              for (od::field ff : frame_json) {
                const std::string_view fk = ff.unescaped_key();
                if (fk == "loc") frame.loc = ff.value().get_uint64();
                if (fk == "pad") frame.pad = static_cast<uint32_t>(ff.value().get_uint64());
                if (fk == "length") frame.length = static_cast<uint32_t>(ff.value().get_uint64());
                if (fk == "jpeg_len") frame.jpeg_len = ff.value().get_uint64();
                if (fk == "jpeg_sha256") frame.jpeg_sha256 = Str(ff.value());
                if (fk == "jpeg_colorspace") frame.colorspace = Str(ff.value());
                if (fk == "decoded_shape") {
                  for (int64_t d : ff.value().get_array()) {
                    frame.decoded_shape.push_back(static_cast<int>(d));
                  }
                }
                if (fk == "decoded_sha256_fast") frame.sha_fast = Str(ff.value());
                if (fk == "decoded_sha256_accurate") frame.sha_accurate = Str(ff.value());
              }
              item.frames.push_back(std::move(frame));
            }
          }
        }
        m.items.push_back(std::move(item));
      }
    }
  }
  const std::vector<std::string> metas = MetaDataTexts(text);
  if (metas.size() != m.items.size()) {
    throw std::runtime_error(path + ": " + std::to_string(metas.size()) + " meta_data values for " +
                             std::to_string(m.items.size()) + " items");
  }
  for (size_t i = 0; i < metas.size(); ++i) m.items[i].meta_data = metas[i];
  return m;
}

std::vector<std::string> GulpFixtureDirs() {
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(FixturesDir())) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("gulpio", 0) == 0) dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace gulpdb::test
