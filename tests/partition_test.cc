// Partitioned index snapshots (engine/partition): every video, position,
// chunk and meta-index entry reads back through the partitioned reader as
// through the local index; builds are deterministic; a publish after a 1%
// append writes about 1% of the index; a lookup fetches at most one base
// partition and one per delta generation; a delta merge rewrites only the
// partitions whose ranges received keys; damaged partitions and disordered
// roots are refused, naming what is wrong.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "engine/core/dataset_view.h"
#include "engine/partition/partitions.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "index/partition_root.h"
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

// A hashed id, as YouTube ids or content hashes are: 40 hex digits, so that
// appends land all over the key space.
double D(uint64_t v) { return static_cast<double>(v); }

std::string HashedId(uint64_t n) { return util::Sha256Hex(std::to_string(n)).substr(0, 40); }

// Appends videos [from, to): 16 small frames each, a label of 100 values.
void AppendVideos(Dataset& ds, uint64_t from, uint64_t to) {
  static const std::string frame = test::FakeJpeg(64, 7);
  const std::vector<std::string_view> frames(16, frame);
  auto w = ds.NewWriter();
  for (uint64_t n = from; n < to; ++n) {
    w->Append(HashedId(n), frames,
              "{\"label\": " + std::to_string(n % 100) + ", \"n\": " + std::to_string(n) + "}");
  }
  w->Commit();
}

std::unique_ptr<Dataset> MakeDataset(const std::string& dir, uint64_t videos) {
  auto ds = Dataset::Create(dir);
  AppendVideos(*ds, 0, videos);
  ds->CreateMetaIndex("label");
  return ds;
}

size_t CountKind(const index::PartitionRoot& root, PartitionKind kind, bool base) {
  return static_cast<size_t>(std::count_if(
      root.partitions.begin(), root.partitions.end(),
      [&](const PartitionEntry& p) { return p.kind == kind && (p.generation == 0) == base; }));
}

std::set<uint64_t> DeltaGenerations(const index::PartitionRoot& root) {
  std::set<uint64_t> out;
  for (const PartitionEntry& p : root.partitions) {
    if (p.generation != 0) out.insert(p.generation);
  }
  return out;
}

// Every video, chunk, position and label of `ds` reads the same through `reader`.
void ExpectSameAsLocal(const Dataset& ds, const PartitionedIndex& reader) {
  engine::IndexTxn txn(ds);
  size_t videos = 0;
  std::vector<std::string> local_ids;
  for (auto c = txn.Videos(); c.Valid(); c.Next()) {
    const index::VideoRecord want = c.record();
    const std::optional<index::VideoRecord> got = reader.FindVideo(c.id());
    BOOST_REQUIRE_MESSAGE(got.has_value(), "missing " << c.id());
    BOOST_CHECK_EQUAL(got->chunk, want.chunk);
    BOOST_CHECK_EQUAL(got->seq, want.seq);
    BOOST_CHECK(got->frames == want.frames);
    BOOST_CHECK(got->crc32c == want.crc32c);
    BOOST_CHECK_EQUAL(got->meta_data, want.meta_data);
    local_ids.emplace_back(c.id());
    ++videos;
  }
  BOOST_CHECK_EQUAL(videos, txn.VideoCount());
  std::vector<std::string> scanned;
  reader.ScanVideos({}, {}, [&](std::string_view id, const index::VideoRecord&) {
    scanned.emplace_back(id);
    return true;
  });
  BOOST_CHECK(scanned == local_ids);

  uint64_t position = 0;
  for (auto c = txn.Order(); c.Valid(); c.Next(), ++position) {
    const std::optional<std::string> id = reader.OrderAt(position);
    BOOST_REQUIRE(id.has_value());
    BOOST_REQUIRE_EQUAL(*id, c.id());
  }
  BOOST_CHECK_EQUAL(reader.OrderCount(), position);
  BOOST_CHECK(!reader.OrderAt(position).has_value());

  for (auto c = txn.Chunks(); c.Valid(); c.Next()) {
    const std::optional<index::ChunkRecord> got = reader.Chunk(c.number());
    BOOST_REQUIRE(got.has_value());
    BOOST_CHECK_EQUAL(got->file_name, c.record().file_name);
    BOOST_CHECK_EQUAL(got->committed_length, c.record().committed_length);
    BOOST_CHECK_EQUAL(got->live_videos, c.record().live_videos);
  }
  for (int label = 0; label < 100; ++label) {
    const std::string value = std::to_string(label);
    BOOST_REQUIRE(reader.MetaLookup("label", value) == ds.Select("label", value));
  }
  BOOST_CHECK(reader.MetaLookup("label", "100").empty());
  BOOST_CHECK(reader.MetaLookup("no such field", "1").empty());
  BOOST_CHECK_EQUAL(reader.info().total_videos, txn.Info().total_videos);
}

BOOST_AUTO_TEST_SUITE(partition_test)

BOOST_AUTO_TEST_CASE(round_trip_of_every_video_position_chunk_and_label) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 20000);
  const BuildResult built = BuildPartitions(*ds, nullptr, {}, tmp / "parts");
  BOOST_TEST_MESSAGE("20000 videos: " << built.root.partitions.size() << " partitions, "
                                      << built.total_bytes << " bytes, root "
                                      << built.root_bytes.size() << " bytes");
  // Records live with the order (by position); the videos partitions only
  // locate an id's order entry.
  BOOST_CHECK_GT(CountKind(built.root, PartitionKind::kOrder, true), 4u);
  BOOST_CHECK_GE(CountKind(built.root, PartitionKind::kVideos, true), 2u);
  BOOST_CHECK_EQUAL(built.root.format_version, index::kUnpagedPartitionRootFormat);
  BOOST_CHECK_EQUAL(built.new_partitions.size(), built.root.partitions.size());
  for (const PartitionEntry& p : built.root.partitions) {
    BOOST_CHECK_LE(p.size, (uint64_t{1} << 20) + (uint64_t{1} << 16));
  }
  // The root on disk is the root returned, under its hash.
  const std::string root_file = test::ReadFile(tmp / "parts/" + built.root_sha256);
  BOOST_CHECK_EQUAL(util::Sha256Hex(root_file), built.root_sha256);
  PartitionedIndex reader(index::DecodePartitionRoot(root_file, "root"),
                          DirectoryFetch(tmp / "parts"), "parts");
  ExpectSameAsLocal(*ds, reader);
  BOOST_CHECK(!reader.FindVideo("not an id").has_value());
  BOOST_CHECK(!reader.FindVideo(HashedId(20000)).has_value());
  BOOST_CHECK_EQUAL(reader.fetches(), built.root.partitions.size());
}

BOOST_AUTO_TEST_CASE(building_twice_gives_the_same_names) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 5000);
  PartitionOptions options;
  options.target_bytes = 128 << 10;
  const BuildResult a = BuildPartitions(*ds, nullptr, options, tmp / "a");
  const BuildResult b = BuildPartitions(*ds, nullptr, options, tmp / "b");
  BOOST_CHECK_EQUAL(a.root_sha256, b.root_sha256);
  BOOST_REQUIRE_EQUAL(a.root.partitions.size(), b.root.partitions.size());
  BOOST_CHECK_GT(a.root.partitions.size(), 4u);
  std::set<std::string> files_a, files_b;
  for (const auto& e : fs::directory_iterator(tmp / "a")) files_a.insert(e.path().filename());
  for (const auto& e : fs::directory_iterator(tmp / "b")) files_b.insert(e.path().filename());
  BOOST_CHECK(files_a == files_b);  // and no temporary file left behind
  BOOST_CHECK_EQUAL(files_a.size(), a.root.partitions.size() + 1);
  // A copy of the dataset (another index file, same content) names the same.
  fs::copy(tmp / "d", tmp / "copy", fs::copy_options::recursive);
  auto copy = Dataset::Open(tmp / "copy");
  const BuildResult c = BuildPartitions(*copy, nullptr, options, tmp / "c");
  BOOST_CHECK_EQUAL(a.root_sha256, c.root_sha256);
}

BOOST_AUTO_TEST_CASE(a_one_percent_append_writes_about_one_percent) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 20000);
  PartitionOptions options;
  options.target_bytes = 128 << 10;
  const BuildResult first = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  AppendVideos(*ds, 20000, 20200);
  const BuildResult second = BuildPartitions(*ds, &first.root, options, tmp / "parts");
  const double share = D(second.new_bytes) / D(second.total_bytes);
  std::printf(
      "partition_test: 1%% append (200 of 20000 hashed ids): new partitions %zu of %zu, "
      "%llu of %llu bytes (%.2f%%), root %zu bytes\n",
      second.new_partitions.size(), second.root.partitions.size(),
      static_cast<unsigned long long>(second.new_bytes),
      static_cast<unsigned long long>(second.total_bytes), 100 * share, second.root_bytes.size());
  const std::set<std::string> fresh(second.new_partitions.begin(), second.new_partitions.end());
  for (const PartitionEntry& p : second.root.partitions) {
    if (fresh.count(p.sha256) != 0) {
      std::printf("partition_test:   new %s partition (generation %llu): %llu bytes\n",
                  index::PartitionKindName(p.kind), static_cast<unsigned long long>(p.generation),
                  static_cast<unsigned long long>(p.size));
    }
  }
  BOOST_CHECK_GT(second.new_bytes, 0u);
  BOOST_CHECK_LE(D(second.new_bytes), 0.03 * D(second.total_bytes));
  BOOST_CHECK(!second.merged);
  BOOST_CHECK_EQUAL(DeltaGenerations(second.root).size(), 1u);
  // Every base video partition kept its hash: the new ids are in the delta.
  BOOST_CHECK_EQUAL(CountKind(second.root, PartitionKind::kVideos, true),
                    CountKind(first.root, PartitionKind::kVideos, true));
  PartitionedIndex reader(second.root, DirectoryFetch(tmp / "parts"), "parts");
  ExpectSameAsLocal(*ds, reader);
}

// Relabels the videos n of [0, count) with n % step == offset.
std::vector<std::string> Relabel(Dataset& ds, uint64_t count, uint64_t step, uint64_t offset,
                                 const std::string& label) {
  std::vector<std::string> ids;
  auto w = ds.NewWriter();
  for (uint64_t n = offset; n < count; n += step) {
    w->UpdateMeta(HashedId(n), "{\"label\": " + label + "}");
    ids.push_back(HashedId(n));
  }
  w->Commit();
  return ids;
}

std::set<std::string> Hashes(const index::PartitionRoot& root, PartitionKind kind) {
  std::set<std::string> out;
  for (const PartitionEntry& p : root.partitions) {
    if (p.kind == kind) out.insert(p.sha256);
  }
  return out;
}

BOOST_AUTO_TEST_CASE(a_scattered_one_percent_relabel_writes_a_record_delta_not_the_order) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 20000);
  PartitionOptions options;
  options.target_bytes = 128 << 10;
  const BuildResult first = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  BOOST_CHECK_EQUAL(first.root.format_version, index::kUnpagedPartitionRootFormat);
  BOOST_REQUIRE_GT(CountKind(first.root, PartitionKind::kOrder, true), 10u);
  Relabel(*ds, 20000, 100, 7, "1000");  // 200 videos, spread over every order partition
  const BuildResult second = BuildPartitions(*ds, &first.root, options, tmp / "parts");
  std::printf("partition_test: 1%% scattered relabel of 20000: %llu of %llu bytes new (%.2f%%)\n",
              static_cast<unsigned long long>(second.new_bytes),
              static_cast<unsigned long long>(second.total_bytes),
              100 * D(second.new_bytes) / D(second.total_bytes));
  BOOST_CHECK_EQUAL(second.root.format_version, index::kPartitionRootFormat);
  // Every order partition kept its hash; the records are in the delta level.
  BOOST_CHECK(Hashes(second.root, PartitionKind::kOrder) ==
              Hashes(first.root, PartitionKind::kOrder));
  BOOST_CHECK_GE(CountKind(second.root, PartitionKind::kRecords, true), 1u);
  BOOST_CHECK_EQUAL(second.root.Count(PartitionKind::kRecords), 200u);
  BOOST_CHECK_LE(D(second.new_bytes), 0.03 * D(second.total_bytes));
  {
    PartitionedIndex reader(second.root, DirectoryFetch(tmp / "parts"), "parts");
    ExpectSameAsLocal(*ds, reader);
    // The root round-trips through its bytes.
    const index::PartitionRoot decoded = index::DecodePartitionRoot(second.root_bytes, "root");
    PartitionedIndex again(decoded, DirectoryFetch(tmp / "parts"), "parts");
    BOOST_CHECK_EQUAL(again.FindVideo(HashedId(7))->meta_data, ds->Find(HashedId(7))->meta_data);
  }

  // An edit again, a removal in a range with deltas, appends: the delta
  // level stays right where its order partitions are rewritten.
  Relabel(*ds, 20000, 100, 7, "1001");
  Relabel(*ds, 20000, 250, 3, "1002");
  ds->Remove({HashedId(107), HashedId(5)});
  AppendVideos(*ds, 20000, 20100);
  const BuildResult third = BuildPartitions(*ds, &second.root, options, tmp / "parts");
  BOOST_CHECK(!third.merged);
  {
    PartitionedIndex reader(third.root, DirectoryFetch(tmp / "parts"), "parts");
    ExpectSameAsLocal(*ds, reader);
    BOOST_CHECK(!reader.FindVideo(HashedId(107)).has_value());
  }
  // Building the same state again gives the same names.
  const BuildResult same = BuildPartitions(*ds, &second.root, options, tmp / "parts");
  BOOST_CHECK_EQUAL(same.root_sha256, third.root_sha256);

  // A delta past a tenth of the order partitions is a rebase: the order
  // partitions are rewritten and the level empties.
  Relabel(*ds, 20000, 5, 1, "1003");
  const BuildResult rebased = BuildPartitions(*ds, &third.root, options, tmp / "parts");
  BOOST_CHECK(rebased.merged);
  BOOST_CHECK_EQUAL(CountKind(rebased.root, PartitionKind::kRecords, true), 0u);
  BOOST_CHECK_EQUAL(rebased.root.format_version, index::kUnpagedPartitionRootFormat);
  PartitionedIndex reader(rebased.root, DirectoryFetch(tmp / "parts"), "parts");
  ExpectSameAsLocal(*ds, reader);
}

BOOST_AUTO_TEST_CASE(a_format_3_build_after_a_relabel_rewrites_the_order_and_reads_the_same) {
  // What older builds write (no record delta level), and what they read.
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 5000);
  PartitionOptions options;
  options.target_bytes = 64 << 10;
  const BuildResult first = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  Relabel(*ds, 5000, 100, 3, "1000");
  const BuildResult with_delta = BuildPartitions(*ds, &first.root, options, tmp / "parts");
  BOOST_REQUIRE_GE(CountKind(with_delta.root, PartitionKind::kRecords, true), 1u);
  options.format = index::kPagedPartitionRootFormat;
  const BuildResult old_format = BuildPartitions(*ds, &with_delta.root, options, tmp / "parts");
  BOOST_CHECK_EQUAL(CountKind(old_format.root, PartitionKind::kRecords, true), 0u);
  BOOST_CHECK_LE(old_format.root.format_version, index::kPagedPartitionRootFormat);
  PartitionedIndex reader(index::DecodePartitionRoot(old_format.root_bytes, "old"),
                          DirectoryFetch(tmp / "parts"), "parts");
  ExpectSameAsLocal(*ds, reader);
  // A record delta in a root that says format 3 is refused.
  index::PartitionRoot mislabeled = with_delta.root;
  mislabeled.format_version = index::kPagedPartitionRootFormat;
  BOOST_CHECK_THROW(index::DecodePartitionRoot(index::EncodePartitionRoot(mislabeled), "root"),
                    CorruptionError);
}

BOOST_AUTO_TEST_CASE(a_damaged_record_delta_is_refused_naming_its_hash) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 3000);
  PartitionOptions options;
  options.target_bytes = 64 << 10;
  const BuildResult first = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  const std::vector<std::string> ids = Relabel(*ds, 3000, 100, 3, "1000");
  const BuildResult built = BuildPartitions(*ds, &first.root, options, tmp / "parts");
  const PartitionEntry* victim = nullptr;
  for (const PartitionEntry& p : built.root.partitions) {
    if (p.kind == PartitionKind::kRecords) victim = &p;
  }
  BOOST_REQUIRE(victim != nullptr);
  const std::string path = tmp / "parts/" + victim->sha256;
  std::string bytes = test::ReadFile(path);
  bytes[bytes.size() / 3] = static_cast<char>(bytes[bytes.size() / 3] ^ 0x01);
  test::WriteFile(path, bytes);
  PartitionedIndex reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
  try {
    reader.FindVideo(ids.back());
    BOOST_ERROR("a read through a damaged record delta answered");
  } catch (const CorruptionError& e) {
    BOOST_CHECK_MESSAGE(test::Contains(e.what(), victim->sha256), e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_read_learns_the_chunk_before_the_order_partition_is_fetched) {
  // FindVideoToRead tells the reader the video's chunk as soon as the
  // videos partition gave its order key, so that a remote reader fetches
  // the chunk's entries while the order partition is on its way.
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 3000);
  PartitionOptions options;
  options.target_bytes = 64 << 10;
  const BuildResult built = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  std::vector<std::string> log;
  const engine::PartitionFetch from_dir = DirectoryFetch(tmp / "parts");
  const engine::PartitionFetch logging = [&](const index::PartitionEntry& entry) {
    log.emplace_back(index::PartitionKindName(entry.kind));
    return from_dir(entry);
  };
  PartitionedIndex reader(built.root, logging, "parts");
  uint32_t told = 0;
  const std::function<void(uint32_t)> known = [&](uint32_t chunk) {
    told = chunk;
    log.emplace_back("chunk known");
  };
  const std::optional<index::VideoRecord> record = reader.FindFrames(HashedId(1234), &known);
  BOOST_REQUIRE(record.has_value());
  BOOST_CHECK_EQUAL(told, record->chunk);
  // Frames only: the read path copies no meta.
  BOOST_CHECK(record->meta_data.empty());
  BOOST_CHECK(!reader.FindVideo(HashedId(1234))->meta_data.empty());
  const std::vector<std::string> want = {"videos", "chunk known", "order"};
  BOOST_CHECK_EQUAL_COLLECTIONS(log.begin(), log.end(), want.begin(), want.end());
  // A video that is not there: never called.
  bool called = false;
  const std::function<void(uint32_t)> never = [&](uint32_t) { called = true; };
  BOOST_CHECK(!reader.FindFrames("no such id", &never).has_value());
  BOOST_CHECK(!called);
}

BOOST_AUTO_TEST_CASE(a_walk_of_every_partition_keeps_a_bounded_number_open) {
  // A publisher's diff and `check` walk every partition of a snapshot: at
  // 10^7 videos 17,600 of them, more files than a process may open.
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 40000);
  PartitionOptions options;
  options.target_bytes = 64 << 10;
  const BuildResult built = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  BOOST_REQUIRE_GT(built.root.partitions.size(), 300u);
  const auto descriptors = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator());
  };
  const auto before = descriptors();
  PartitionedIndex reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
  uint64_t videos = 0;
  reader.ScanVideos({}, {}, [&](std::string_view, const index::VideoRecord&) { return ++videos; });
  BOOST_CHECK_EQUAL(videos, 40000u);
  for (uint64_t n = 0; n < 40000; n += 97) BOOST_REQUIRE(reader.OrderAt(n).has_value());
  BOOST_CHECK(reader.MetaLookup("label", "3") == ds->Select("label", "3"));
  BOOST_TEST_MESSAGE(built.root.partitions.size()
                     << " partitions, " << reader.open_partitions() << " open after the walk, "
                     << descriptors() - before << " descriptors more");
  BOOST_CHECK_LE(reader.open_partitions(), 256u);
  BOOST_CHECK_LT(descriptors() - before, 600);
  // A second walk reopens what it needs and gives the same answers.
  BOOST_CHECK(reader.FindVideo(HashedId(39999)).has_value());
  BOOST_CHECK(reader.FindVideo(HashedId(0)).has_value());
}

BOOST_AUTO_TEST_CASE(a_lookup_fetches_one_base_partition_one_per_delta_and_its_order_partition) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 20000);
  PartitionOptions options;
  options.target_bytes = 128 << 10;
  options.max_deltas = 3;
  BuildResult built = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  for (uint64_t g = 0; g < 3; ++g) {
    AppendVideos(*ds, 20000 + g * 200, 20200 + g * 200);
    built = BuildPartitions(*ds, &built.root, options, tmp / "parts");
  }
  const size_t deltas = DeltaGenerations(built.root).size();
  BOOST_REQUIRE_EQUAL(deltas, 3u);
  std::mt19937 rng(5);
  size_t most = 0;
  for (int i = 0; i < 50; ++i) {
    const uint64_t n = std::uniform_int_distribution<uint64_t>(0, 20599)(rng);
    PartitionedIndex reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
    BOOST_REQUIRE(reader.FindVideo(HashedId(n)).has_value());
    // The videos partitions (base + deltas) locate it; its record is in one
    // order partition.
    BOOST_CHECK_LE(reader.fetches(), 1 + deltas + 1);
    most = std::max<size_t>(most, reader.fetches());
    PartitionedIndex position_reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
    BOOST_REQUIRE(position_reader.OrderAt(n).has_value());
    BOOST_CHECK_EQUAL(position_reader.fetches(), 1u);
  }
  BOOST_TEST_MESSAGE("most partitions fetched by one lookup: " << most);
}

BOOST_AUTO_TEST_CASE(a_merge_rewrites_only_the_partitions_whose_ranges_got_keys) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 20000);
  PartitionOptions options;
  options.target_bytes = 128 << 10;
  options.max_deltas = 2;
  const BuildResult first = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  // Three small generations: two appends and a removal (a tombstone), then
  // the third delta is one too many and the deltas merge.
  std::set<std::string> touched = {HashedId(20000), HashedId(20001), HashedId(20002),
                                   HashedId(20003), HashedId(77)};
  AppendVideos(*ds, 20000, 20002);
  BuildResult built = BuildPartitions(*ds, &first.root, options, tmp / "parts");
  BOOST_CHECK(!built.merged);
  BOOST_REQUIRE_EQUAL(ds->Remove(std::vector<std::string>{HashedId(77)}), 1u);
  built = BuildPartitions(*ds, &built.root, options, tmp / "parts");
  BOOST_CHECK(!built.merged);
  {
    PartitionedIndex reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
    BOOST_CHECK(!reader.FindVideo(HashedId(77)).has_value());  // the tombstone hides it
    ExpectSameAsLocal(*ds, reader);
  }
  AppendVideos(*ds, 20002, 20004);
  built = BuildPartitions(*ds, &built.root, options, tmp / "parts");
  BOOST_CHECK(built.merged);
  BOOST_CHECK(DeltaGenerations(built.root).empty());

  // Base video partitions: those of the first build whose range got none of
  // the touched ids kept their hash; the others are new.
  std::vector<PartitionEntry> old_base;
  for (const PartitionEntry& p : first.root.partitions) {
    if (p.kind == PartitionKind::kVideos) old_base.push_back(p);
  }
  std::set<std::string> now;
  for (const PartitionEntry& p : built.root.partitions) {
    if (p.kind == PartitionKind::kVideos) now.insert(p.sha256);
  }
  size_t kept = 0, rewritten = 0;
  for (size_t i = 0; i < old_base.size(); ++i) {
    bool got_keys = false;
    for (const std::string& id : touched) {
      const bool after_first = i == 0 || id >= old_base[i].first_key;
      const bool before_next = i + 1 == old_base.size() || id < old_base[i + 1].first_key;
      got_keys = got_keys || (after_first && before_next);
    }
    BOOST_CHECK_MESSAGE(
        now.count(old_base[i].sha256) == (got_keys ? 0u : 1u),
        "partition " << i
                     << (got_keys ? " got keys but kept its hash" : " got no key but changed"));
    (got_keys ? rewritten : kept) += 1;
  }
  BOOST_TEST_MESSAGE("merge: " << kept << " kept, " << rewritten << " rewritten");
  BOOST_CHECK_GT(kept, 0u);
  BOOST_CHECK_GT(rewritten, 0u);
  PartitionedIndex reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
  BOOST_CHECK(!reader.FindVideo(HashedId(77)).has_value());
  ExpectSameAsLocal(*ds, reader);
}

// The first base video partition's file, and an id it holds.
const PartitionEntry& FirstVideoPartition(const index::PartitionRoot& root) {
  for (const PartitionEntry& p : root.partitions) {
    if (p.kind == PartitionKind::kVideos) return p;
  }
  throw std::logic_error("no video partition");
}

void ExpectRefused(const BuildResult& built, const std::string& dir, const std::string& hash,
                   const std::string& detail) {
  PartitionedIndex reader(built.root, DirectoryFetch(dir), dir);
  try {
    reader.FindVideo(FirstVideoPartition(built.root).first_key);
    BOOST_ERROR("a damaged partition was read");
  } catch (const CorruptionError& e) {
    BOOST_CHECK_MESSAGE(test::Contains(e.what(), hash) && test::Contains(e.what(), detail),
                        e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_damaged_partition_is_refused_naming_its_hash) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 3000);
  PartitionOptions options;
  options.target_bytes = 128 << 10;
  const BuildResult built = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  const PartitionEntry& p = FirstVideoPartition(built.root);
  const std::string path = tmp / "parts/" + p.sha256;
  const std::string good = test::ReadFile(path);

  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x10);
  test::WriteFile(path, flipped);
  ExpectRefused(built, tmp / "parts", p.sha256, "its SHA-256 is");

  test::WriteFile(path, good.substr(0, good.size() - 4096));
  ExpectRefused(built, tmp / "parts", p.sha256, "bytes, the root says");

  // Another partition's bytes under this name (of the same size, so that
  // only the hash tells).
  std::string other;
  for (const PartitionEntry& q : built.root.partitions) {
    if (q.sha256 != p.sha256 && q.size == p.size) other = q.sha256;
  }
  if (!other.empty()) {
    test::WriteFile(path, test::ReadFile(tmp / "parts/" + other));
    ExpectRefused(built, tmp / "parts", p.sha256, "its SHA-256 is " + other);
  }
  fs::remove(path);
  PartitionedIndex reader(built.root, DirectoryFetch(tmp / "parts"), "parts");
  BOOST_CHECK_THROW(reader.FindVideo(p.first_key), NotFoundError);

  // The good bytes again: read.
  test::WriteFile(path, good);
  PartitionedIndex healed(built.root, DirectoryFetch(tmp / "parts"), "parts");
  BOOST_CHECK(healed.FindVideo(p.first_key).has_value());
}

BOOST_AUTO_TEST_CASE(a_root_out_of_order_or_overlapping_is_refused) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 3000);
  PartitionOptions options;
  options.target_bytes = 64 << 10;
  const BuildResult built = BuildPartitions(*ds, nullptr, options, tmp / "parts");
  BOOST_REQUIRE_GE(CountKind(built.root, PartitionKind::kVideos, true), 2u);
  // The encoded root decodes to itself.
  const index::PartitionRoot again = index::DecodePartitionRoot(built.root_bytes, "root");
  BOOST_CHECK_EQUAL(index::EncodePartitionRoot(again), built.root_bytes);

  auto expect_refused = [&](index::PartitionRoot root, const std::string& detail) {
    const std::string bytes = index::EncodePartitionRoot(root);
    try {
      index::DecodePartitionRoot(bytes, "root-under-test");
      BOOST_ERROR("a bad root was accepted: " << detail);
    } catch (const CorruptionError& e) {
      BOOST_CHECK_MESSAGE(
          test::Contains(e.what(), "root-under-test") && test::Contains(e.what(), detail),
          e.what());
    }
    BOOST_CHECK_THROW(PartitionedIndex(root, DirectoryFetch(tmp / "parts"), "parts"),
                      CorruptionError);
  };
  index::PartitionRoot swapped = built.root;
  std::swap(swapped.partitions[0], swapped.partitions[1]);
  expect_refused(swapped, "overlaps or precedes");
  index::PartitionRoot overlapping = built.root;
  overlapping.partitions[1].first_key = overlapping.partitions[0].last_key;
  expect_refused(overlapping, "overlaps or precedes");
  index::PartitionRoot kinds = built.root;
  std::swap(kinds.partitions.front(), kinds.partitions.back());
  expect_refused(kinds, "out of order");
  index::PartitionRoot positions = built.root;
  for (PartitionEntry& p : positions.partitions) {
    if (p.kind == PartitionKind::kOrder) p.first_position += 1;
  }
  expect_refused(positions, "first position");
  index::PartitionRoot reversed = built.root;
  std::swap(reversed.partitions[0].first_key, reversed.partitions[0].last_key);
  expect_refused(reversed, "empty or reversed");

  BOOST_CHECK_THROW(index::DecodePartitionRoot(built.root_bytes.substr(0, 100), "root"),
                    CorruptionError);
  BOOST_CHECK_THROW(index::DecodePartitionRoot("not a root at all", "root"), CorruptionError);
}

// Not a benchmark: the numbers docs/remote_datasets.md quotes, at 10^5
// videos, printed so that a run shows them.
BOOST_AUTO_TEST_CASE(measure_at_ten_to_the_fifth_videos) {
  TempDir tmp;
  const uint64_t n = 100000;
  auto ds = MakeDataset(tmp / "d", n);
  engine::CopyIndexTo(*ds, tmp / "snapshot.mdb", /*compact=*/true);
  const uint64_t snapshot = test::FileSizeOf(tmp / "snapshot.mdb");
  for (const uint64_t target : {uint64_t{1} << 20, uint64_t{256} << 10}) {
    PartitionOptions options;
    options.target_bytes = target;
    const std::string dir = tmp / ("parts-" + std::to_string(target));
    const BuildResult built = BuildPartitions(*ds, nullptr, options, dir);
    std::map<PartitionKind, std::pair<size_t, uint64_t>> by_kind;
    for (const PartitionEntry& p : built.root.partitions) {
      by_kind[p.kind].first += 1;
      by_kind[p.kind].second += p.size;
    }
    std::printf(
        "partition_test: %llu videos, target %llu KiB: whole snapshot %llu bytes (%.0f B/video);"
        " partitions %zu, %llu bytes (%.0f B/video); root %zu bytes (%.1f B/partition)\n",
        static_cast<unsigned long long>(n), static_cast<unsigned long long>(target >> 10),
        static_cast<unsigned long long>(snapshot), D(snapshot) / D(n), built.root.partitions.size(),
        static_cast<unsigned long long>(built.total_bytes), D(built.total_bytes) / D(n),
        built.root_bytes.size(), D(built.root_bytes.size()) / D(built.root.partitions.size()));
    for (const auto& [kind, count_bytes] : by_kind) {
      std::printf("partition_test:   %-10s %4zu partitions %10llu bytes (%.1f B/video)\n",
                  index::PartitionKindName(kind), count_bytes.first,
                  static_cast<unsigned long long>(count_bytes.second),
                  D(count_bytes.second) / D(n));
    }
    BOOST_CHECK_LT(D(built.total_bytes), 1.2 * D(snapshot));
    BOOST_CHECK_LT(built.root_bytes.size(), 200u * built.root.partitions.size());
    // One lookup, one position and one label from fresh readers: the bytes
    // each fetches besides the root.
    uint64_t fetched = 0;
    const engine::PartitionFetch from_dir = DirectoryFetch(dir);
    const engine::PartitionFetch counting = [&](const index::PartitionEntry& entry) {
      const std::string path = from_dir(entry);
      fetched += test::FileSizeOf(path);
      return path;
    };
    PartitionedIndex reader(built.root, counting, dir);
    BOOST_REQUIRE(reader.FindVideo(HashedId(12345)).has_value());
    BOOST_CHECK_EQUAL(reader.fetches(), 2u);  // the videos partition, the order partition
    const uint64_t lookup = fetched;
    fetched = 0;
    PartitionedIndex positions(built.root, counting, dir);
    BOOST_REQUIRE(positions.OrderAt(n / 2).has_value());
    const uint64_t position = fetched;
    fetched = 0;
    PartitionedIndex labels(built.root, counting, dir);
    BOOST_CHECK_EQUAL(labels.MetaLookup("label", "42").size(), n / 100);
    std::printf(
        "partition_test:   fresh reader: FindVideo fetches %llu bytes, OrderAt %llu, "
        "MetaLookup of one label (1000 ids) %llu in %llu partitions\n",
        static_cast<unsigned long long>(lookup), static_cast<unsigned long long>(position),
        static_cast<unsigned long long>(fetched),
        static_cast<unsigned long long>(labels.fetches()));
  }
}

BOOST_AUTO_TEST_CASE(a_two_level_root_lists_large_groups_by_pages_and_reads_the_same) {
  TempDir tmp;
  auto ds = MakeDataset(tmp / "d", 20000);
  const std::string parts = tmp / "parts";
  PartitionOptions options;
  options.target_bytes = 64 << 10;  // many partitions
  options.page_bytes = 1024;        // pages of a few entries each
  const BuildResult first = BuildPartitions(*ds, nullptr, options, parts);
  BOOST_REQUIRE_EQUAL(first.root.format_version, 3u);
  BOOST_REQUIRE_GT(first.root.pages.size(), 4u);
  PartitionOptions flat_options = options;
  flat_options.page_bytes = uint64_t{1} << 30;  // nothing paged: format 2
  const BuildResult flat = BuildPartitions(*ds, nullptr, flat_options, tmp / "flat");
  BOOST_CHECK_EQUAL(flat.root.format_version, index::kUnpagedPartitionRootFormat);
  BOOST_CHECK(flat.root.pages.empty());
  // The same partitions; the root lists the large groups by pages.
  BOOST_REQUIRE_EQUAL(first.root.partitions.size(), flat.root.partitions.size());
  for (size_t i = 0; i < flat.root.partitions.size(); ++i) {
    BOOST_CHECK_EQUAL(first.root.partitions[i].sha256, flat.root.partitions[i].sha256);
  }
  const index::PartitionRoot top = index::DecodePartitionRoot(first.root_bytes, "top");
  BOOST_TEST_MESSAGE("two-level root: " << first.root_bytes.size() << " bytes and "
                                        << top.pages.size() << " pages, flat root "
                                        << flat.root_bytes.size() << " bytes");
  BOOST_CHECK_LT(first.root_bytes.size(), flat.root_bytes.size() / 2);
  BOOST_CHECK_LT(top.partitions.size(), first.root.partitions.size());
  BOOST_CHECK_EQUAL(top.Count(PartitionKind::kOrder), 20000u);
  BOOST_CHECK_EQUAL(top.PartitionBytes(), flat.root.PartitionBytes());

  // Read through the pages: the same answers as the local index.
  {
    PartitionedIndex reader(top, DirectoryFetch(parts), "parts", engine::DirectoryPageFetch(parts));
    ExpectSameAsLocal(*ds, reader);
    // Positions, scans of the order and its blocks: each page read once.
    uint64_t scanned = 0;
    reader.ScanOrder({}, {}, [&](std::string_view, std::string_view) { return ++scanned > 0; });
    BOOST_CHECK_EQUAL(scanned, 20000u);
    BOOST_CHECK_EQUAL(
        reader.OrderBoundaries().size(),
        static_cast<size_t>(std::count_if(
            first.root.partitions.begin(), first.root.partitions.end(),
            [](const PartitionEntry& p) { return p.kind == PartitionKind::kOrder; })));
    BOOST_CHECK_EQUAL(reader.page_fetches(), top.pages.size());
    BOOST_CHECK_EQUAL(reader.IndexBytes(), flat.total_bytes);
  }
  // One lookup reads one page of each paged group it probes, no other.
  std::mt19937 rng(11);
  for (int i = 0; i < 20; ++i) {
    const uint64_t n = std::uniform_int_distribution<uint64_t>(0, 19999)(rng);
    PartitionedIndex reader(top, DirectoryFetch(parts), "parts", engine::DirectoryPageFetch(parts));
    BOOST_REQUIRE(reader.FindVideo(HashedId(n)).has_value());
    BOOST_CHECK_EQUAL(reader.fetches(), 2u);
    BOOST_CHECK_LE(reader.page_fetches(), 2u);  // the videos page, the order page
    BOOST_CHECK_GE(reader.page_fetches(), 1u);
    PartitionedIndex positions(top, DirectoryFetch(parts), "parts",
                               engine::DirectoryPageFetch(parts));
    BOOST_REQUIRE(positions.OrderAt(n).has_value());
    BOOST_CHECK_EQUAL(positions.fetches(), 1u);
    BOOST_CHECK_LE(positions.page_fetches(), 1u);
  }
  // Without a way to read pages, a paged root is refused, not read as empty.
  BOOST_CHECK_THROW(PartitionedIndex(top, DirectoryFetch(parts), "parts"), InvalidArgumentError);

  // Expanded, it is the built root again, and a publisher diffs against it:
  // a 1% append keeps almost every page.
  const index::PartitionRoot expanded =
      engine::ExpandPartitionRoot(top, engine::DirectoryPageFetch(parts), "parts");
  BOOST_CHECK(index::EncodePartitionRoot(expanded) == first.root_bytes);
  BOOST_CHECK_EQUAL(expanded.partitions.size(), first.root.partitions.size());
  BOOST_CHECK_THROW(BuildPartitions(*ds, &top, options, parts), InvalidArgumentError);
  AppendVideos(*ds, 20000, 20200);
  const BuildResult second = BuildPartitions(*ds, &expanded, options, parts);
  std::set<std::string> before;
  for (const index::RootPage& p : first.root.pages) before.insert(p.sha256);
  size_t kept = 0;
  for (const index::RootPage& p : second.root.pages) kept += before.count(p.sha256);
  BOOST_TEST_MESSAGE("1% append: " << kept << " of " << second.root.pages.size()
                                   << " pages kept their hash");
  BOOST_CHECK_GE(D(kept), 0.8 * D(second.root.pages.size()));
  {
    PartitionedIndex reader(index::DecodePartitionRoot(second.root_bytes, "second"),
                            DirectoryFetch(parts), "parts", engine::DirectoryPageFetch(parts));
    ExpectSameAsLocal(*ds, reader);
  }

  // A page with other bytes is refused, naming it; so is a page whose
  // partitions are not those its entry in the root says.
  const index::RootPage& page = top.pages.front();
  const std::string page_path = parts + "/" + page.sha256;
  const std::string good = test::ReadFile(page_path);
  std::string bad = good;
  bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x20);
  test::WriteFile(page_path, bad);
  try {
    engine::ExpandPartitionRoot(top, engine::DirectoryPageFetch(parts), "parts");
    BOOST_ERROR("a damaged root page was read");
  } catch (const CorruptionError& e) {
    BOOST_CHECK_NE(std::string(e.what()).find(page.sha256), std::string::npos);
  }
  test::WriteFile(page_path, good);
  std::vector<PartitionEntry> run = index::DecodeRootPage(good, page, "page");
  BOOST_REQUIRE_GT(run.size(), 1u);
  run.pop_back();
  try {
    index::DecodeRootPage(index::EncodeRootPage(run), page, "short page");
    BOOST_ERROR("a page missing a partition was read");
  } catch (const CorruptionError& e) {
    BOOST_CHECK_NE(std::string(e.what()).find("short page"), std::string::npos);
  }
  index::PartitionRoot old_format = top;
  old_format.format_version = 2;
  try {
    index::ValidatePartitionRoot(old_format, "format 2 with pages");
    BOOST_ERROR("pages in a format 2 root were accepted");
  } catch (const CorruptionError& e) {
    BOOST_CHECK_NE(std::string(e.what()).find("pages in a format 2 root"), std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
