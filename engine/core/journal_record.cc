// The journal record of a write batch (write_batch.h,
// docs/format/journal_format.md): its encoding, written by a journaled
// commit (writer.cc), and its decoding, read by the replay of a journal
// (writer_recovery.cc). As LevelDB's
// write_batch.cc, the record's bytes belong beside the journal that stores
// them (journal.h), not in the commit that fills them; the byte coding is
// payload_codec.h's.
#include <sys/uio.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/journal.h"
#include "engine/core/meta_edit.h"
#include "engine/core/payload_codec.h"
#include "engine/core/write_batch.h"
#include "gulpdb/error.h"
#include "util/file_io.h"
#include "util/test_bug.h"

namespace gulpdb::engine {

std::string EncodeLsn(uint64_t lsn) {
  std::string out;
  PutU64(&out, lsn);
  return out;
}

uint64_t AppliedLsn(const DatasetImpl& ds, const index::Txn& txn) {
  std::string_view bytes;
  if (!txn.Get(ds.info, kJournalLsnKey, &bytes) || bytes.size() != 8) return 0;
  return PayloadReader(bytes, "journal_lsn").Fixed(8);
}

// The record of this batch: the frames it wrote (read back from the page
// cache) with their offsets, then what Apply reads. Version 2 adds
// the meta edits; a batch without edits keeps version 1's bytes.
std::string WriteBatch::EncodeRecord(uint32_t chunk) const {
  // GULPDB_TEST_BUG=edit-not-journaled: the record leaves the edits out.
  const bool with_edits = !edits.empty() && !util::TestBugEnabled("edit-not-journaled");
  std::string out;
  PutU32(&out, with_edits ? 2 : 1);  // payload version
  PutU32(&out, chunk);
  PutU32(&out, static_cast<uint32_t>(touched.size()));
  for (const auto& [n, t] : touched) {
    PutU32(&out, n);
    PutU64(&out, t.committed_length);
    PutU64(&out, t.end);
    const size_t at = out.size();
    out.resize(at + (t.end - t.committed_length));
    t.file->ReadAt(t.committed_length, out.data() + at, t.end - t.committed_length);
  }
  PutU32(&out, static_cast<uint32_t>(pending.size()));
  for (const Pending& p : pending) {
    PutBytes(&out, p.id);
    PutBytes(&out, index::EncodeVideoRecord(p.record));
    out.push_back(p.dropped ? 1 : 0);
  }
  PutU32(&out, static_cast<uint32_t>(removals.size()));
  for (const std::string& id : removals) PutBytes(&out, id);
  if (with_edits) EncodeMetaEdits(edits, &out);
  return out;
}

std::vector<uint32_t> WriteBatch::RecordChunks(const Journal::Record& r,
                                               const std::string& journal_path) {
  PayloadReader in(r.payload, journal_path + " record " + std::to_string(r.lsn));
  in.Fixed(4);
  in.Fixed(4);
  std::vector<uint32_t> chunks;
  const uint64_t n_touched = in.Fixed(4);
  for (uint64_t i = 0; i < n_touched; ++i) {
    chunks.push_back(static_cast<uint32_t>(in.Fixed(4)));
    const uint64_t start = in.Fixed(8);
    in.Bytes(in.Fixed(8) - start);
  }
  return chunks;
}

uint32_t WriteBatch::DecodeRecord(const DatasetImpl& ds, const Journal::Record& r,
                                  const std::string& journal_path, const index::Txn& txn,
                                  std::map<uint32_t, std::shared_ptr<ChunkFile>>* files) {
  PayloadReader in(r.payload, journal_path + " record " + std::to_string(r.lsn));
  const uint64_t version = in.Fixed(4);
  if (version != 1 && version != 2) {
    throw CorruptionError("replay " + journal_path + " record " + std::to_string(r.lsn) +
                          ": unknown payload version");
  }
  const auto chunk = static_cast<uint32_t>(in.Fixed(4));
  const uint64_t n_touched = in.Fixed(4);
  for (uint64_t i = 0; i < n_touched; ++i) {
    const auto n = static_cast<uint32_t>(in.Fixed(4));
    Touched& t = touched[n];
    t.committed_length = in.Fixed(8);
    t.end = in.Fixed(8);
    if (t.end < t.committed_length) {
      throw CorruptionError("replay " + journal_path + " record " + std::to_string(r.lsn) +
                            ": frames end before they start");
    }
    std::string_view bytes = in.Bytes(t.end - t.committed_length);
    auto& f = (*files)[n];
    if (!f) {
      f = std::make_shared<ChunkFile>(ds.ChunkPath(ds.GetChunk(txn, n).file_name),
                                      ChunkFile::Mode::kAppend);
    }
    struct iovec iov {
      const_cast<char*>(bytes.data()), bytes.size()
    };
    util::PwritevFull(f->fd(), &iov, 1, t.committed_length, f->path());
    t.file = f;
  }
  const uint64_t n_pending = in.Fixed(4);
  for (uint64_t i = 0; i < n_pending; ++i) {
    Pending p;
    p.id = std::string(in.Sized());
    p.record = index::DecodeVideoRecord(in.Sized(), p.id);
    p.dropped = in.Fixed(1) != 0;
    pending.push_back(std::move(p));
  }
  const uint64_t n_removals = in.Fixed(4);
  for (uint64_t i = 0; i < n_removals; ++i) removals.insert(std::string(in.Sized()));
  if (version >= 2) DecodeMetaEdits(&in, &edits);
  return chunk;
}

}  // namespace gulpdb::engine
