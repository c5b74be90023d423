// A Dataset read through a partitioned index snapshot (OpenOnIndexSource
// over engine/partition's PartitionedIndex): every public read gives the
// local dataset's answer (records, frame bytes, decoded frames, Select,
// ForEach order, IdAt at every position, Stats), after appends (delta
// partitions) and removals (tombstones) too; a Find + read fetches at most
// one base partition, one per delta generation and one chunk partition;
// writes are refused as for any read-only dataset; a damaged partition is a
// CorruptionError naming its hash. Also the positional reads of a local
// dataset (IdAt, IdsAt, OrderBlocks) against Ids(), and IdsDigest, local and
// through partitions, against a SHA-256 of the ids computed here.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/core/dataset_view.h"
#include "engine/core/index_source.h"
#include "engine/open.h"
#include "engine/partition/partitions.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/jpeg.h"
#include "gulpdb/maintenance.h"
#include "gulpdb/query.h"
#include "index/partition_root.h"
#include "support/sha256.h"
#include "support/test_util.h"
#include "util/sha256.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using engine::BuildPartitions;
using engine::BuildResult;
using engine::DirectoryFetch;
using engine::PartitionedIndex;
using engine::PartitionOptions;
using index::PartitionEntry;
using index::PartitionKind;
using test::TempDir;

std::string HashedId(uint64_t n) { return util::Sha256Hex(std::to_string(n)).substr(0, 40); }

// Four small decodable frames per video, varied by `n`.
std::vector<std::string> Frames(uint64_t n) {
  std::vector<std::string> frames;
  for (uint64_t f = 0; f < 4; ++f) {
    std::vector<uint8_t> px(16 * 8 * 3);
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 7 + n * 13 + f) % 251);
    frames.push_back(ThreadLocalEncoder().Encode(px.data(), 16, 8, 3));
  }
  return frames;
}

void AppendVideos(Dataset& ds, uint64_t from, uint64_t to) {
  auto w = ds.NewWriter();
  for (uint64_t n = from; n < to; ++n) {
    const std::vector<std::string> frames = Frames(n);
    const std::vector<std::string_view> views(frames.begin(), frames.end());
    w->Append(HashedId(n), views,
              "{\"label\": " + std::to_string(n % 10) + ", \"n\": " + std::to_string(n) + "}");
  }
  w->Commit();
}

// 1,500 videos in chunks of 50, a meta index on "label" (not on "n").
std::unique_ptr<Dataset> MakeDataset(const std::string& dir) {
  CreateOptions options;
  options.videos_per_chunk = 50;
  auto ds = Dataset::Create(dir, options);
  AppendVideos(*ds, 0, 1500);
  ds->CreateMetaIndex("label");
  return ds;
}

PartitionOptions SmallPartitions() {
  PartitionOptions options;
  options.target_bytes = 64 << 10;  // the smallest target: several partitions of most kinds
  options.max_deltas = 4;
  return options;
}

struct Snapshot {
  std::shared_ptr<PartitionedIndex> index;
  std::unique_ptr<Dataset> dataset;
};

// The dataset in `dir` read through the partitions of `built` in `parts`,
// its chunks from the files under `dir`.
Snapshot OpenPartitioned(const std::string& dir, const BuildResult& built,
                         const std::string& parts) {
  Snapshot s;
  s.index = std::make_shared<PartitionedIndex>(built.root, DirectoryFetch(parts), parts);
  s.dataset = engine::OpenOnIndexSource(dir, OpenOptions{}, s.index, nullptr);
  return s;
}

void ExpectSameVideo(const VideoInfo& got, const VideoInfo& want) {
  BOOST_CHECK_EQUAL(got.id, want.id);
  BOOST_CHECK_EQUAL(got.chunk, want.chunk);
  BOOST_CHECK_EQUAL(got.seq, want.seq);
  BOOST_CHECK(got.frames == want.frames);
  BOOST_CHECK(got.checksums == want.checksums);
  BOOST_CHECK_EQUAL(got.meta_data, want.meta_data);
}

void ExpectSameFrames(const StoredFrames& got, const StoredFrames& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) BOOST_REQUIRE(got[i] == want[i]);
}

// Every public read of `part` gives `local`'s answer.
void ExpectSameReads(const Dataset& local, const Dataset& part) {
  const std::vector<std::string> ids = local.Ids();
  BOOST_REQUIRE_EQUAL(part.Count(), local.Count());
  BOOST_REQUIRE(part.Ids() == ids);
  for (uint64_t p = 0; p < ids.size(); ++p) BOOST_REQUIRE_EQUAL(part.IdAt(p), ids[p]);
  BOOST_CHECK_THROW(part.IdAt(ids.size()), OutOfRangeError);
  BOOST_CHECK(part.IdsAt(10, 25) == local.IdsAt(10, 25));
  BOOST_CHECK(part.IdsAt(ids.size() - 3, 100) == local.IdsAt(ids.size() - 3, 100));
  BOOST_CHECK(part.IdsAt(ids.size(), 5).empty());

  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& id = ids[i];
    BOOST_REQUIRE(part.Contains(id));
    ExpectSameVideo(part.Get(id), local.Get(id));
    BOOST_CHECK_EQUAL(part.FrameCount(id), local.FrameCount(id));
    if (i % 7 == 0) ExpectSameFrames(part.ReadJpegs(id), local.ReadJpegs(id));
  }
  const std::string id = ids[ids.size() / 2];
  ExpectSameFrames(part.ReadJpegs(id, Selection::Indices({3, 1})),
                   local.ReadJpegs(id, Selection::Indices({3, 1})));
  const DecodedFrames got = part.ReadFrames(id);
  const DecodedFrames want = local.ReadFrames(id);
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t f = 0; f < got.size(); ++f) {
    BOOST_REQUIRE(got.shape(f) == want.shape(f));
  }
  BOOST_CHECK(std::equal(got.data(0), got.data(0) + got.byte_size(), want.data(0)));
  std::vector<FrameRequest> requests;
  for (size_t i = 0; i < ids.size(); i += 97)
    requests.push_back(FrameRequest{ids[i], Selection::All()});
  const std::vector<StoredFrames> batch = part.ReadJpegBatch(requests);
  const std::vector<StoredFrames> local_batch = local.ReadJpegBatch(requests);
  for (size_t i = 0; i < batch.size(); ++i) ExpectSameFrames(batch[i], local_batch[i]);

  BOOST_CHECK(!part.Contains("no such id"));
  BOOST_CHECK(!part.Find("no such id").has_value());
  BOOST_CHECK_THROW(part.Get("no such id"), IdNotFoundError);
  BOOST_CHECK_THROW(part.FrameCount("no such id"), IdNotFoundError);
  BOOST_CHECK_THROW(part.ReadJpegs("no such id"), IdNotFoundError);

  std::vector<VideoInfo> walked, local_walked;
  part.ForEach([&](const VideoInfo& v) {
    walked.push_back(v);
    return true;
  });
  local.ForEach([&](const VideoInfo& v) {
    local_walked.push_back(v);
    return true;
  });
  BOOST_REQUIRE_EQUAL(walked.size(), local_walked.size());
  for (size_t i = 0; i < walked.size(); ++i) ExpectSameVideo(walked[i], local_walked[i]);
  size_t in_chunk = 0;
  const uint32_t chunk = local_walked[local_walked.size() / 3].chunk;
  std::vector<std::string> chunk_ids, local_chunk_ids;
  part.ForEachInChunk(chunk, [&](const VideoInfo& v) {
    chunk_ids.push_back(v.id);
    return ++in_chunk < 1000;
  });
  local.ForEachInChunk(chunk, [&](const VideoInfo& v) {
    local_chunk_ids.push_back(v.id);
    return true;
  });
  BOOST_CHECK(!chunk_ids.empty());
  BOOST_CHECK(chunk_ids == local_chunk_ids);

  const std::vector<ChunkInfo> chunks = part.Chunks(), local_chunks = local.Chunks();
  BOOST_REQUIRE_EQUAL(chunks.size(), local_chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    BOOST_CHECK_EQUAL(chunks[i].number, local_chunks[i].number);
    BOOST_CHECK_EQUAL(chunks[i].file_name, local_chunks[i].file_name);
    BOOST_CHECK_EQUAL(chunks[i].committed_length, local_chunks[i].committed_length);
    BOOST_CHECK_EQUAL(chunks[i].appended_videos, local_chunks[i].appended_videos);
    BOOST_CHECK_EQUAL(chunks[i].live_videos, local_chunks[i].live_videos);
    BOOST_CHECK_EQUAL(chunks[i].live_bytes, local_chunks[i].live_bytes);
    BOOST_CHECK_EQUAL(chunks[i].full, local_chunks[i].full);
  }
  const DatasetStats stats = part.Stats(), local_stats = local.Stats();
  BOOST_CHECK_EQUAL(stats.format_version, local_stats.format_version);
  BOOST_CHECK_EQUAL(stats.creator, local_stats.creator);
  BOOST_CHECK_EQUAL(stats.videos, local_stats.videos);
  BOOST_CHECK_EQUAL(stats.frames, local_stats.frames);
  BOOST_CHECK_EQUAL(stats.chunks, local_stats.chunks);
  BOOST_CHECK_EQUAL(stats.committed_bytes, local_stats.committed_bytes);
  BOOST_CHECK_EQUAL(stats.live_bytes, local_stats.live_bytes);
  BOOST_CHECK_EQUAL(stats.garbage_bytes, local_stats.garbage_bytes);
  BOOST_CHECK_EQUAL(stats.videos_per_chunk, local_stats.videos_per_chunk);
  BOOST_CHECK_EQUAL(stats.bytes_per_chunk, local_stats.bytes_per_chunk);
  BOOST_CHECK_EQUAL(stats.checksums, local_stats.checksums);
  BOOST_CHECK_EQUAL(stats.uuid, local_stats.uuid);
  BOOST_CHECK_GT(stats.index_bytes, 0u);

  // Select: by the meta index, by a scan (no index on "n"), both, none.
  BOOST_CHECK(part.MetaIndexes() == local.MetaIndexes());
  for (int label = 0; label < 11; ++label) {
    const std::string value = std::to_string(label);
    BOOST_REQUIRE(part.Select("label", value) == local.Select("label", value));
  }
  const std::vector<MetaCondition> both = {MetaCondition::Equals("label", "3"),
                                           MetaCondition::Equals("n", "1203")};
  BOOST_CHECK(part.Select(both) == local.Select(both));
  BOOST_CHECK(part.Select("n", "17") == local.Select("n", "17"));
  BOOST_CHECK(part.Select(std::vector<MetaCondition>{}) == ids);
  const std::vector<std::string> keys = {"label", "n", "absent"};
  BOOST_CHECK(part.AbsentMetaKeys(keys) == local.AbsentMetaKeys(keys));
  // Splits: none here, as locally (a dataset with splits: the next test).
  BOOST_REQUIRE(local.Splits().empty());
  BOOST_CHECK(part.Splits().empty());
  BOOST_CHECK_THROW(part.Split("train"), NameNotFoundError);
}

// What a dataset on a partitioned snapshot refuses: every write.
void ExpectReadOnly(Dataset& part) {
  BOOST_CHECK(part.read_only());
  BOOST_CHECK_THROW(part.NewWriter(), InvalidArgumentError);
  BOOST_CHECK_THROW(part.Remove({part.IdAt(0)}), InvalidArgumentError);
  BOOST_CHECK_THROW(part.CreateMetaIndex("n"), InvalidArgumentError);
  BOOST_CHECK_THROW(part.DropMetaIndex("label"), InvalidArgumentError);
  BOOST_CHECK_THROW(Compact(part), InvalidArgumentError);
  BOOST_CHECK_THROW(engine::IndexTxn txn(part), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE(partition_read_test)

BOOST_AUTO_TEST_CASE(every_read_through_partitions_matches_the_local_dataset) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  const BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  BOOST_REQUIRE_GT(built.root.partitions.size(), 8u);
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  ExpectSameReads(*local, *s.dataset);
  ExpectReadOnly(*s.dataset);

  // OrderBlocks: the order partitions' first positions.
  std::vector<uint64_t> firsts;
  for (const PartitionEntry& p : built.root.partitions) {
    if (p.kind == PartitionKind::kOrder) firsts.push_back(p.first_position);
  }
  BOOST_CHECK_GT(firsts.size(), 1u);
  BOOST_CHECK(s.dataset->OrderBlocks() == firsts);
  // Nothing of the local index was used: the local dataset's LMDB files can
  // go and every read still answers.
  const std::vector<std::string> ids = local->Ids();
  local.reset();
  fs::remove_all(tmp / "d/gulpdb.index");
  Snapshot again = OpenPartitioned(tmp / "d", built, tmp / "parts");
  BOOST_CHECK(again.dataset->Ids() == ids);
  BOOST_CHECK_EQUAL(again.dataset->ReadJpegs(ids[5]).size(), 4u);
}

BOOST_AUTO_TEST_CASE(named_splits_are_read_through_partitions) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  const std::vector<std::string> ids = local->Ids();
  std::vector<std::string> big;  // several split-member partitions at the smallest target
  for (size_t i = 0; i < ids.size(); i += 1) big.push_back(ids[(i * 7) % ids.size()]);
  {
    auto w = local->NewWriter();
    w->SetSplit("train", big);
    w->SetSplit("val", {ids[3], ids[1]});
    w->Commit();
  }
  const BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  BOOST_CHECK(!built.root.splits_omitted);
  BOOST_CHECK_EQUAL(index::DecodePartitionRoot(built.root_bytes, "root").splits.size(), 2u);
  size_t member_partitions = 0;
  for (const PartitionEntry& p : built.root.partitions) {
    member_partitions += p.kind == PartitionKind::kSplitMembers;
  }
  BOOST_CHECK_GT(member_partitions, 1u);
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    const std::vector<SplitInfo> splits = s.dataset->Splits();
    BOOST_REQUIRE_EQUAL(splits.size(), 2u);
    BOOST_CHECK_EQUAL(splits[0].name, "train");
    BOOST_CHECK_EQUAL(splits[0].count, big.size());
    BOOST_CHECK_EQUAL(s.index->fetches(), 0u);  // the root lists them
    BOOST_CHECK(s.dataset->Split("val") == local->Split("val"));
    BOOST_CHECK_EQUAL(s.index->fetches(), 1u);  // a small split: one partition
    BOOST_CHECK(s.dataset->Split("train") == big);
    BOOST_CHECK_THROW(s.dataset->Split("test"), NameNotFoundError);
  }
  // Changed splits are published again; removed ones are gone.
  {
    auto w = local->NewWriter();
    BOOST_REQUIRE(w->RemoveSplit("train"));
    w->SetSplit("val", {ids[5]});
    w->Commit();
  }
  const BuildResult rebuilt =
      BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  Snapshot again = OpenPartitioned(tmp / "d", rebuilt, tmp / "parts");
  BOOST_REQUIRE_EQUAL(again.dataset->Splits().size(), 1u);
  BOOST_CHECK(again.dataset->Split("val") == std::vector<std::string>{ids[5]});
  // A format 1 root leaves splits out and says so: asking is an error, not "none".
  PartitionOptions old_format = SmallPartitions();
  old_format.format = 1;
  const BuildResult v1 = BuildPartitions(*local, nullptr, old_format, tmp / "parts1");
  BOOST_CHECK(v1.root.splits_omitted);
  Snapshot s1 = OpenPartitioned(tmp / "d", v1, tmp / "parts1");
  for (const auto& read : std::vector<std::function<void()>>{[&] { s1.dataset->Splits(); },
                                                             [&] { s1.dataset->Split("val"); }}) {
    try {
      read();
      BOOST_FAIL("a partitioned snapshot without the dataset's splits answered");
    } catch (const InvalidArgumentError& e) {
      BOOST_TEST(std::string(e.what()).find("does not carry them") != std::string::npos, e.what());
    }
  }
  BOOST_CHECK_EQUAL(s1.dataset->ReadJpegs(ids[1]).size(), 4u);
}

// The same check, the same value counts and the same export for the local
// dataset and its partitioned snapshot over the same files: one code path
// (engine/core/index_source.h) serves both indexes, so both find the same
// things, and the same damage.
BOOST_AUTO_TEST_CASE(check_counts_and_export_give_the_same_answers_on_both_indexes) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  const std::vector<std::string> ids = local->Ids();
  {
    auto w = local->NewWriter();
    w->SetSplit("val", {ids[9], ids[2], ids[700]});
    w->Commit();
  }
  const BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  const std::vector<const Dataset*> both = {local.get(), s.dataset.get()};

  // Value counts from the meta index, and none for a key without one.
  const std::optional<std::vector<MetaValueCount>> counts = local->CountMetaValues("label");
  BOOST_REQUIRE(counts.has_value());
  BOOST_REQUIRE_EQUAL(counts->size(), 10u);
  for (const MetaValueCount& c : *counts) BOOST_CHECK_EQUAL(c.count, 150u);
  for (const Dataset* ds : both) {
    const std::optional<std::vector<MetaValueCount>> got = ds->CountMetaValues("label");
    BOOST_REQUIRE(got.has_value());
    BOOST_REQUIRE_EQUAL(got->size(), counts->size());
    for (size_t i = 0; i < got->size(); ++i) {
      BOOST_CHECK_EQUAL((*got)[i].value, (*counts)[i].value);
      BOOST_CHECK_EQUAL((*got)[i].count, (*counts)[i].count);
    }
    BOOST_CHECK(!ds->CountMetaValues("n").has_value());
    BOOST_CHECK(ds->Split("val") == (std::vector<std::string>{ids[9], ids[2], ids[700]}));
    std::vector<std::string> want;  // label = n % 10, in insertion order
    for (uint64_t n = 4; n < 100; n += 10) want.push_back(HashedId(n));
    BOOST_CHECK(ds->Select("label = 4 and n < 100") == want);
  }

  // Check, deep: a sound dataset, the same counts.
  CheckOptions deep;
  deep.deep = true;
  for (const Dataset* ds : both) {
    const CheckReport report = engine::CheckOpenDataset(const_cast<Dataset&>(*ds), deep);
    for (const CheckProblem& p : report.problems) BOOST_ERROR(p.where << ": " << p.what);
    BOOST_CHECK_EQUAL(report.videos, ids.size());
    BOOST_CHECK_EQUAL(report.frames, 4 * ids.size());
    BOOST_CHECK_EQUAL(report.chunks, local->Chunks().size());
  }

  // Export: the same .gmeta files, byte for byte.
  std::vector<std::string> exported;
  for (size_t k = 0; k < both.size(); ++k) {
    const std::string out = tmp / ("export" + std::to_string(k));
    fs::create_directories(out);
    const ExportReport report = ExportGmeta(*both[k], out);
    BOOST_CHECK_EQUAL(report.videos, ids.size());
    std::string all;
    for (const auto& entry : fs::directory_iterator(out)) {
      if (entry.path().extension() == ".gmeta") {
        all += entry.path().filename().string() + "\n" + test::ReadFile(entry.path().string());
      }
    }
    BOOST_CHECK(!all.empty());
    exported.push_back(all);
  }
  BOOST_CHECK(exported[0] == exported[1]);

  // A damaged frame: the same one problem on both, naming the video.
  const VideoInfo video = local->Get(ids[321]);
  std::string chunk_path;
  for (const ChunkInfo& c : local->Chunks()) {
    if (c.number == video.chunk) chunk_path = tmp / "d/" + c.file_name;
  }
  BOOST_REQUIRE(!chunk_path.empty());
  std::string bytes = test::ReadFile(chunk_path);
  const size_t at = video.frames[2].offset + 12;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
  test::WriteFile(chunk_path, bytes);
  for (const Dataset* ds : both) {
    const CheckReport report = engine::CheckOpenDataset(const_cast<Dataset&>(*ds), deep);
    BOOST_REQUIRE_EQUAL(report.problems.size(), 1u);
    BOOST_CHECK(test::Contains(report.problems[0].where, ids[321]));
    BOOST_CHECK(test::Contains(report.problems[0].where, "frame 2"));
    BOOST_CHECK(test::Contains(report.problems[0].what, "CRC-32C"));
    BOOST_CHECK_THROW(ds->ReadJpegs(ids[321]), CorruptionError);
  }
}

BOOST_AUTO_TEST_CASE(reads_match_after_an_append_and_a_removal_rebuilt_as_deltas) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  // An append: a delta generation of videos and meta entries.
  AppendVideos(*local, 1500, 1540);
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  BOOST_REQUIRE(!built.merged);
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    ExpectSameReads(*local, *s.dataset);
  }
  // A removal: tombstones in the next delta.
  std::vector<std::string> gone;
  for (uint64_t n = 0; n < 1540; n += 37) gone.push_back(HashedId(n));
  BOOST_REQUIRE_EQUAL(local->Remove(gone), gone.size());
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  BOOST_REQUIRE(!built.merged);
  size_t deltas = 0;
  for (const PartitionEntry& p : built.root.partitions) deltas += p.generation != 0;
  BOOST_REQUIRE_GT(deltas, 0u);
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  ExpectSameReads(*local, *s.dataset);
  for (const std::string& id : gone) {
    BOOST_CHECK(!s.dataset->Contains(id));
    BOOST_CHECK_THROW(s.dataset->ReadJpegs(id), IdNotFoundError);
  }
}

BOOST_AUTO_TEST_CASE(a_find_and_read_fetches_the_videos_levels_one_order_and_one_chunk_partition) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  AppendVideos(*local, 1500, 1520);
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  AppendVideos(*local, 1520, 1540);
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  std::set<uint64_t> generations;
  for (const PartitionEntry& p : built.root.partitions) {
    if (p.kind == PartitionKind::kVideos && p.generation != 0) generations.insert(p.generation);
  }
  BOOST_REQUIRE_EQUAL(generations.size(), 2u);
  std::mt19937 rng(11);
  for (int i = 0; i < 30; ++i) {
    const uint64_t n = std::uniform_int_distribution<uint64_t>(0, 1539)(rng);
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    BOOST_REQUIRE_EQUAL(s.index->fetches(), 0u);
    BOOST_REQUIRE(s.dataset->Find(HashedId(n)).has_value());
    BOOST_REQUIRE_EQUAL(s.dataset->ReadJpegs(HashedId(n)).size(), 4u);
    // 1 base + 2 deltas (videos), the order partition holding the record,
    // 1 chunk partition.
    BOOST_CHECK_LE(s.index->fetches(), 1u + generations.size() + 1u + 1u);
    Snapshot p = OpenPartitioned(tmp / "d", built, tmp / "parts");
    BOOST_REQUIRE_EQUAL(p.dataset->IdAt(n), local->IdAt(n));
    BOOST_CHECK_EQUAL(p.index->fetches(), 1u);
    // The video at a position is read from its order partition (it holds
    // the record) and the chunk list: no videos partition.
    BOOST_REQUIRE_EQUAL(p.dataset->ReadJpegs(local->IdAt(n)).size(), 4u);
    BOOST_CHECK_EQUAL(p.index->fetches(), 2u);
  }
  // A Select on the indexed key reads meta partitions only, never the videos.
  size_t meta_partitions = 0;
  for (const PartitionEntry& p : built.root.partitions) {
    meta_partitions += p.kind == PartitionKind::kMetaIndex;
  }
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  BOOST_CHECK(s.dataset->Select("label", "4") == local->Select("label", "4"));
  BOOST_CHECK_GT(s.index->fetches(), 0u);
  BOOST_CHECK_LE(s.index->fetches(), meta_partitions);
  BOOST_TEST_MESSAGE("partitions: " << built.root.partitions.size() << ", meta " << meta_partitions
                                    << "; a Select fetched " << s.index->fetches());
}

BOOST_AUTO_TEST_CASE(a_block_of_positions_is_read_from_its_order_partition_alone) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  const BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  const std::vector<uint64_t> blocks = s.dataset->OrderBlocks();
  BOOST_REQUIRE_GT(blocks.size(), 2u);
  // The second block: every position's id, record and frames, in a shuffled
  // order, as a sampler reads a block.
  std::vector<uint64_t> positions;
  for (uint64_t p = blocks[1]; p < blocks[2]; ++p) positions.push_back(p);
  std::shuffle(positions.begin(), positions.end(), std::mt19937(3));
  for (const uint64_t position : positions) {
    const std::string id = s.dataset->IdAt(position);
    BOOST_REQUIRE_EQUAL(id, local->IdAt(position));
    ExpectSameVideo(s.dataset->Get(id), local->Get(id));
    BOOST_REQUIRE_EQUAL(s.dataset->ReadJpegs(id).size(), 4u);
  }
  // Its order partition and the chunk list; with hashed ids, the block's
  // records would be in every videos partition if they were kept by id.
  BOOST_CHECK_EQUAL(s.index->fetches(), 2u);
  BOOST_TEST_MESSAGE(positions.size()
                     << " positions read with " << s.index->fetches() << " partitions fetched");
}

BOOST_AUTO_TEST_CASE(a_root_of_the_older_format_is_still_read_and_rebuilt_in_the_new_one) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  PartitionOptions old_format = SmallPartitions();
  old_format.format = 1;
  const BuildResult v1 = BuildPartitions(*local, nullptr, old_format, tmp / "parts");
  BOOST_REQUIRE_EQUAL(v1.root.format_version, 1u);
  // Decoded from its bytes, as a reader gets it.
  BuildResult decoded = v1;
  decoded.root = index::DecodePartitionRoot(v1.root_bytes, "v1");
  {
    Snapshot s = OpenPartitioned(tmp / "d", decoded, tmp / "parts");
    ExpectSameReads(*local, *s.dataset);
    // Format 1 keeps records by id: an id's read fetches its videos
    // partition, never an order partition.
    Snapshot one = OpenPartitioned(tmp / "d", decoded, tmp / "parts");
    BOOST_REQUIRE(one.dataset->Find(HashedId(7)).has_value());
    BOOST_CHECK_EQUAL(one.index->fetches(), 1u);
  }
  // The next publish writes the current format, as a new generation.
  AppendVideos(*local, 1500, 1510);
  const BuildResult v2 = BuildPartitions(*local, &decoded.root, SmallPartitions(), tmp / "parts");
  BOOST_CHECK_EQUAL(v2.root.format_version, index::kUnpagedPartitionRootFormat);
  BOOST_CHECK_EQUAL(v2.root.generation, v1.root.generation + 1);
  Snapshot s = OpenPartitioned(tmp / "d", v2, tmp / "parts");
  ExpectSameReads(*local, *s.dataset);
  // A format this gulpdb does not know is refused, naming it.
  index::PartitionRoot future = v2.root;
  future.format_version = index::kPartitionRootFormat + 1;
  try {
    index::DecodePartitionRoot(index::EncodePartitionRoot(future), "future");
    BOOST_ERROR("a root of an unknown format was decoded");
  } catch (const CorruptionError& e) {
    BOOST_CHECK_MESSAGE(test::Contains(e.what(), "format"), e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_damaged_partition_is_a_corruption_error_naming_its_hash) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  {
    auto w = local->NewWriter();
    w->SetSplit("train", local->Ids());
    w->Commit();
  }
  const BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  for (const PartitionKind kind :
       {PartitionKind::kVideos, PartitionKind::kOrder, PartitionKind::kChunks,
        PartitionKind::kMetaIndex, PartitionKind::kSplitMembers}) {
    const PartitionEntry* victim = nullptr;
    for (const PartitionEntry& p : built.root.partitions) {
      if (p.kind == kind && victim == nullptr) victim = &p;
    }
    BOOST_REQUIRE(victim != nullptr);
    const std::string path = tmp / "parts/" + victim->sha256;
    const std::string good = test::ReadFile(path);
    std::string bad = good;
    bad[bad.size() / 3] = static_cast<char>(bad[bad.size() / 3] ^ 0x01);
    test::WriteFile(path, bad);
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    auto refused = [&](const std::function<void()>& read) {
      try {
        read();
        BOOST_ERROR("a read through damaged partition " << victim->sha256 << " answered");
      } catch (const CorruptionError& e) {
        BOOST_CHECK_MESSAGE(test::Contains(e.what(), victim->sha256), e.what());
      }
    };
    switch (kind) {
      case PartitionKind::kVideos:
        refused([&] { s.dataset->Find(victim->first_key); });
        refused([&] { s.dataset->ReadJpegs(victim->first_key); });
        break;
      case PartitionKind::kOrder:
        refused([&] { s.dataset->IdAt(victim->first_position); });
        refused([&] { s.dataset->Ids(); });
        break;
      case PartitionKind::kChunks:
        refused([&] { s.dataset->Chunks(); });
        refused([&] { s.dataset->ReadJpegs(local->IdAt(0)); });
        break;
      case PartitionKind::kMetaIndex:
        refused([&] {
          for (int label = 0; label < 10; ++label)
            s.dataset->Select("label", std::to_string(label));
        });
        break;
      case PartitionKind::kSplitMembers:
        refused([&] { s.dataset->Split("train"); });
        break;
      case PartitionKind::kRecords:  // a first build has no record delta
        break;
    }
    test::WriteFile(path, good);
  }
}

BOOST_AUTO_TEST_CASE(check_walks_every_partition_and_checks_records_against_chunks) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  AppendVideos(*local, 1500, 1530);
  local->Remove({HashedId(3), HashedId(1501)});
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  CheckOptions deep;
  deep.deep = true;
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    const CheckReport report = engine::CheckOpenDataset(*s.dataset, deep);
    for (const CheckProblem& p : report.problems) BOOST_ERROR(p.where << ": " << p.what);
    BOOST_CHECK_EQUAL(report.videos, local->Count());
    BOOST_CHECK_EQUAL(report.chunks, local->Chunks().size());
    BOOST_CHECK_EQUAL(s.index->fetches(), built.root.partitions.size());
  }
  // A frame changed in its chunk file: found through the partitions' records.
  const VideoInfo video = local->Get(HashedId(700));
  std::string chunk_path;
  for (const ChunkInfo& c : local->Chunks()) {
    if (c.number == video.chunk) chunk_path = tmp / "d/" + c.file_name;
  }
  BOOST_REQUIRE(!chunk_path.empty());
  std::string bytes = test::ReadFile(chunk_path);
  const size_t at = video.frames[1].offset + 10;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x40);
  test::WriteFile(chunk_path, bytes);
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    const CheckReport report = engine::CheckOpenDataset(*s.dataset, deep);
    BOOST_REQUIRE_EQUAL(report.problems.size(), 1u);
    BOOST_CHECK(test::Contains(report.problems[0].where, HashedId(700)));
    BOOST_CHECK(test::Contains(report.problems[0].what, "CRC-32C"));
  }
  // A damaged partition: a problem naming its hash.
  const PartitionEntry* victim = nullptr;
  for (const PartitionEntry& p : built.root.partitions) {
    if (p.kind == PartitionKind::kOrder) victim = &p;
  }
  BOOST_REQUIRE(victim != nullptr);
  std::string part = test::ReadFile(tmp / "parts/" + victim->sha256);
  part[part.size() / 2] = static_cast<char>(part[part.size() / 2] ^ 0x01);
  test::WriteFile(tmp / "parts/" + victim->sha256, part);
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  const CheckReport report = engine::CheckOpenDataset(*s.dataset, CheckOptions{});
  bool named = false;
  for (const CheckProblem& p : report.problems) named |= test::Contains(p.what, victim->sha256);
  BOOST_CHECK(named);
}

BOOST_AUTO_TEST_CASE(local_positions_follow_ids_through_removals_and_compaction) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d");
  auto expect_positions = [&] {
    const std::vector<std::string> ids = ds->Ids();
    for (uint64_t p = 0; p < ids.size(); ++p) BOOST_REQUIRE_EQUAL(ds->IdAt(p), ids[p]);
    BOOST_CHECK_THROW(ds->IdAt(ids.size()), OutOfRangeError);
    for (uint64_t start : {uint64_t{0}, uint64_t{49}, uint64_t{50}, uint64_t{777}}) {
      const std::vector<std::string> got = ds->IdsAt(start, 130);
      BOOST_REQUIRE_EQUAL(got.size(), std::min<uint64_t>(130, ids.size() - start));
      for (size_t i = 0; i < got.size(); ++i) BOOST_REQUIRE_EQUAL(got[i], ids[start + i]);
    }
    BOOST_CHECK(ds->IdsAt(ids.size(), 3).empty());
    BOOST_CHECK(ds->IdsAt(ids.size() - 1, 3) == std::vector<std::string>{ids.back()});
  };
  expect_positions();
  // Whole chunks and single videos removed: chunks with fewer (or no) videos.
  std::vector<std::string> gone;
  for (uint64_t n = 100; n < 150; ++n) gone.push_back(HashedId(n));
  for (uint64_t n = 0; n < 1500; n += 13) gone.push_back(HashedId(n));
  std::sort(gone.begin(), gone.end());
  gone.erase(std::unique(gone.begin(), gone.end()), gone.end());
  ds->Remove(gone);
  expect_positions();
  CompactOptions compact;
  compact.min_garbage_fraction = 0;
  Compact(*ds, compact);
  expect_positions();
  // OrderBlocks: fixed blocks of 2048 positions.
  BOOST_CHECK(ds->OrderBlocks() == std::vector<uint64_t>{0});
  AppendVideos(*ds, 2000, 6500);
  expect_positions();
  const uint64_t count = ds->Count();
  std::vector<uint64_t> blocks;
  for (uint64_t p = 0; p < count; p += 2048) blocks.push_back(p);
  BOOST_CHECK(ds->OrderBlocks() == blocks);
}

// IdsDigest's rule, computed here with the tests' own SHA-256: each id as
// its length (4 bytes, little-endian) and its bytes.
std::string ReferenceIdsDigest(const std::vector<std::string>& ids, size_t count) {
  std::string bytes;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t n = static_cast<uint32_t>(ids[i].size());
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((n >> (8 * b)) & 0xff));
    bytes += ids[i];
  }
  return test::Sha256Hex(bytes.data(), bytes.size());
}

void ExpectIdsDigests(const Dataset& ds, const std::vector<std::string>& ids) {
  BOOST_REQUIRE_EQUAL(ds.Count(), ids.size());
  for (size_t count : {size_t{0}, size_t{1}, size_t{49}, size_t{50}, ids.size() / 2, ids.size()}) {
    const std::string digest = ds.IdsDigest(count);
    BOOST_CHECK_EQUAL(digest, ReferenceIdsDigest(ids, count));
    BOOST_CHECK_EQUAL(digest, IdsDigestOf(std::vector<std::string>(
                                  ids.begin(), ids.begin() + static_cast<ptrdiff_t>(count))));
  }
  BOOST_CHECK_THROW(ds.IdsDigest(ids.size() + 1), OutOfRangeError);
}

// A walk of the order from its start (Ids, IdsDigest) reads the order
// partitions ahead of the scan, 16 at a time (engine/core/order_scan.h):
// each is still fetched once, and no other.
BOOST_AUTO_TEST_CASE(a_walk_of_the_order_fetches_each_order_partition_it_reads_once) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  AppendVideos(*local, 1500, 9000);
  const BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  std::vector<uint64_t> blocks;
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    blocks = s.dataset->OrderBlocks();
  }
  BOOST_REQUIRE_GT(blocks.size(), 2 * 16 + 1u);  // more than two windows
  for (const size_t end : {size_t{2}, size_t{17}, size_t{33}, blocks.size()}) {
    // The first `end` blocks, and one position past them when there is one.
    const uint64_t count = end < blocks.size() ? blocks[end] + 1 : local->Count();
    const size_t touched = std::min(end + 1, blocks.size());
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    BOOST_CHECK_EQUAL(s.dataset->IdsDigest(count), local->IdsDigest(count));
    BOOST_CHECK_EQUAL(s.index->fetches(), touched);
  }
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  BOOST_CHECK(s.dataset->Ids() == local->Ids());
  BOOST_CHECK_EQUAL(s.index->fetches(), blocks.size());
}

BOOST_AUTO_TEST_CASE(ids_digest_names_the_first_ids_locally_and_through_partitions) {
  TempDir tmp;
  auto local = MakeDataset(tmp / "d");
  const std::vector<std::string> ids = local->Ids();
  BOOST_CHECK_EQUAL(local->IdsDigest(0),
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The length prefix keeps ids apart: ["ab", "c"] is not ["a", "bc"].
  BOOST_CHECK_NE(IdsDigestOf({"ab", "c"}), IdsDigestOf({"a", "bc"}));
  ExpectIdsDigests(*local, ids);
  BOOST_CHECK(!local->Uuid().empty());
  BOOST_CHECK_EQUAL(local->Uuid(), local->Stats().uuid);
  BuildResult built = BuildPartitions(*local, nullptr, SmallPartitions(), tmp / "parts");
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    ExpectIdsDigests(*s.dataset, ids);
    BOOST_CHECK_EQUAL(s.dataset->Uuid(), local->Uuid());
  }
  // Appends leave the digest of the videos that were there; a new snapshot
  // (delta partitions) agrees.
  const std::string before = local->IdsDigest(ids.size());
  AppendVideos(*local, 1500, 1540);
  BOOST_CHECK_EQUAL(local->IdsDigest(ids.size()), before);
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  {
    Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
    BOOST_CHECK_EQUAL(s.dataset->IdsDigest(ids.size()), before);
    ExpectIdsDigests(*s.dataset, local->Ids());
  }
  // A removal changes it; so does a replacement, which moves the id to the end.
  local->Remove({ids[700]});
  BOOST_CHECK_NE(local->IdsDigest(ids.size()), before);
  ExpectIdsDigests(*local, local->Ids());
  const std::string after_removal = local->IdsDigest(100);
  WriterOptions replace;
  replace.on_duplicate = OnDuplicate::kReplace;
  {
    auto w = local->NewWriter(replace);
    const std::vector<std::string> frames = Frames(3);
    w->Append(ids[3], std::vector<std::string_view>(frames.begin(), frames.end()), "{}");
    w->Commit();
  }
  BOOST_CHECK_NE(local->IdsDigest(100), after_removal);
  BOOST_CHECK_EQUAL(local->IdAt(local->Count() - 1), ids[3]);
  ExpectIdsDigests(*local, local->Ids());
  built = BuildPartitions(*local, &built.root, SmallPartitions(), tmp / "parts");
  Snapshot s = OpenPartitioned(tmp / "d", built, tmp / "parts");
  ExpectIdsDigests(*s.dataset, local->Ids());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
