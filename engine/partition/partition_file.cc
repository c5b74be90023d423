#include "engine/partition/partition_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "engine/partition/partitions.h"
#include "gulpdb/error.h"
#include "index/lmdb_verify.h"
#include "util/coding.h"
#include "util/file_io.h"
#include "util/hex.h"
#include "util/sha256.h"

namespace gulpdb::engine::part {

std::string BigEndian32(uint32_t v) {
  std::string out;
  util::PutFixedBig(&out, v, 4);
  return out;
}

bool IsSha256Name(const std::string& s) { return util::IsSha256Hex(s); }

[[noreturn]] void PartitionCorrupt(const PartitionEntry& entry, const std::string& path,
                                   const std::string& detail) {
  throw CorruptionError("open partition " + entry.sha256 + " (" + path + "): " + detail);
}

// The logical key of a stored entry.
std::string_view LogicalKey(PartitionKind kind, std::string_view key, std::string_view value,
                            const PartitionEntry& entry, const std::string& path) {
  if (kind != PartitionKind::kOrder) return key;
  if (value.size() <= kOrderKeySize) PartitionCorrupt(entry, path, "an order entry is too short");
  return value.substr(0, kOrderKeySize);
}
std::string_view LogicalValue(PartitionKind kind, std::string_view value) {
  return kind == PartitionKind::kOrder ? value.substr(kOrderKeySize) : value;
}

namespace {

std::optional<OrderValue> SplitOrderValue(std::string_view value) {
  if (value.size() < 2) return std::nullopt;
  const auto n = static_cast<size_t>(util::GetFixedBig(value, 0, 2));
  if (n == 0 || value.size() < 2 + n) return std::nullopt;
  return OrderValue{value.substr(2, n), value.substr(2 + n)};
}

}  // namespace
OrderValue ParseOrderValue(std::string_view value, const PartitionEntry& entry,
                           const std::string& path) {
  std::optional<OrderValue> v = SplitOrderValue(value);
  if (!v) PartitionCorrupt(entry, path, "an order entry's id is cut short");
  return *v;
}
OrderValue ParseOrderValue(std::string_view value, const std::string& name) {
  std::optional<OrderValue> v = SplitOrderValue(value);
  if (!v) throw CorruptionError("partitioned index " + name + ": an order entry's id is cut short");
  return *v;
}

std::string EncodeRecordDelta(std::string_view id, std::string_view record, std::string_view base) {
  std::string out;
  util::PutFixedBig(&out, id.size(), 2);
  out.append(id);
  util::PutFixedBig(&out, record.size(), 4);
  out.append(record);
  out.append(base);
  return out;
}

RecordDelta ParseRecordDelta(std::string_view value, const PartitionEntry& entry,
                             const std::string& path) {
  const std::optional<OrderValue> v = SplitOrderValue(value);
  if (!v || v->record.size() < 4) PartitionCorrupt(entry, path, "a record delta is cut short");
  const auto n = static_cast<size_t>(util::GetFixedBig(v->record, 0, 4));
  if (n == 0 || v->record.size() - 4 < n) {
    PartitionCorrupt(entry, path, "a record delta's record is cut short");
  }
  return RecordDelta{v->id, v->record.substr(4, n), v->record.substr(4 + n)};
}

std::unique_ptr<PartitionFile> OpenPartitionFile(const std::string& path,
                                                 const PartitionEntry& entry) {
  VerifyPartitionFile(path, entry);
  auto file = std::make_unique<PartitionFile>();
  file->entry = entry;
  file->path = path;
  index::EnvOptions options;
  options.read_only = true;
  options.no_lock = true;
  options.no_subdir = true;
  options.max_dbs = 2;
  options.initial_map_size = (entry.size + kPageSize - 1) / kPageSize * kPageSize;
  try {
    file->env = index::Env::Open(path, options);
    file->dbi = file->env->OpenDb(index::PartitionKindName(entry.kind), false);
  } catch (const Error& e) {
    PartitionCorrupt(entry, path, e.what());
  }
  // The bytes are the ones the root names; their content must be too.
  index::Txn txn = file->env->BeginRead();
  if (txn.Count(file->dbi) != entry.count) {
    PartitionCorrupt(entry, path,
                     "holds " + std::to_string(txn.Count(file->dbi)) + " entries, the root says " +
                         std::to_string(entry.count));
  }
  index::Cursor cursor(txn, file->dbi);
  if (!cursor.First() ||
      LogicalKey(entry.kind, cursor.key(), cursor.value(), entry, path) != entry.first_key ||
      !cursor.Last() ||
      LogicalKey(entry.kind, cursor.key(), cursor.value(), entry, path) != entry.last_key) {
    PartitionCorrupt(entry, path, "its keys are not the range the root gives");
  }
  return file;
}

// Whether the partitions of every paged group of `root` are listed too.
bool Expanded(const PartitionRoot& root) {
  for (const index::RootPage& page : root.pages) {
    const bool listed =
        std::any_of(root.partitions.begin(), root.partitions.end(), [&](const PartitionEntry& p) {
          return p.kind == page.kind && p.generation == page.generation;
        });
    if (!listed) return false;
  }
  return true;
}

}  // namespace gulpdb::engine::part

namespace gulpdb::engine {

using part::PartitionCorrupt;

void VerifyPartitionFile(const std::string& path, const index::PartitionEntry& entry) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) PartitionCorrupt(entry, path, "cannot stat the file");
  if (!S_ISREG(st.st_mode)) PartitionCorrupt(entry, path, "not a regular file");
  if (static_cast<uint64_t>(st.st_size) != entry.size) {
    PartitionCorrupt(
        entry, path,
        std::to_string(st.st_size) + " bytes, the root says " + std::to_string(entry.size));
  }
  std::string sha;
  {
    util::UniqueFd fd = util::OpenFile(path, O_RDONLY);
    sha = util::Sha256HexOfFile(fd.get(), path, 0, entry.size);
  }
  if (sha != entry.sha256) PartitionCorrupt(entry, path, "its SHA-256 is " + sha);
  try {
    index::CheckIndexFileHeader(path);
  } catch (const CorruptionError& e) {
    PartitionCorrupt(entry, path, e.what());
  }
  const index::IndexFileReport report = index::VerifyIndexFile(path);
  if (!report.healthy()) PartitionCorrupt(entry, path, report.problems.front());
}

}  // namespace gulpdb::engine
