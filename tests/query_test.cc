// Metadata queries and named splits (engine/query/): Select answers the same
// with and without a meta index, against a model of what every video's meta
// is, after every write path (append, removal, replacement, compaction,
// merge by attaching and by copying, import, index creation); the index
// survives in the transaction that changes videos; splits are all or
// nothing, follow removals, and survive export and import.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "engine/core/dataset_impl.h"
#include "engine/query/splits_file.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/interop.h"
#include "gulpdb/maintenance.h"
#include "index/query_keys.h"
#include "support/test_util.h"

namespace gulpdb {
namespace {

namespace fs = std::filesystem;
using test::FakeJpeg;
using test::TempDir;

// Value classes of the model, each with the spellings a video's meta may use
// for it: a query for any spelling must find every video of the class. The
// classes are told apart by hand here, not by the code under test.
struct ValueClass {
  std::string name;
  std::vector<std::string> spellings;
};
const std::vector<ValueClass>& Classes() {
  static const std::vector<ValueClass> classes = {
      {"cat", {"\"cat\""}},
      {"dog", {"\"dog\"", "\"d\\u006fg\""}},
      {"three", {"3", "3.0", "3e0", "30E-1"}},
      {"three_text", {"\"3\""}},
      {"true", {"true"}},
      {"null", {"null"}},
      {"list", {"[1, \"a\"]", "[1.0,\"a\"]"}},
      {"long_a", {"\"" + std::string(450, 'a') + "\""}},
      {"long_a2", {"\"" + std::string(449, 'a') + "b\""}},  // same length, another value
  };
  return classes;
}

// What each video's first meta entry says: the class of "label" (and of its
// unindexed twin "mirror"), or -1 when the entry has no such key.
class Model {
 public:
  void Set(const std::string& id, int cls) { classes_[id] = cls; }
  void Erase(const std::string& id) { classes_.erase(id); }
  int Get(const std::string& id) const { return classes_.at(id); }
  // The ids of class `cls`, in the order Ids() gives them.
  std::vector<std::string> Expected(const Dataset& ds, int cls) const {
    std::vector<std::string> out;
    for (const std::string& id : ds.Ids()) {
      if (classes_.at(id) == cls) out.push_back(id);
    }
    return out;
  }
  size_t size() const { return classes_.size(); }

 private:
  std::map<std::string, int> classes_;
};

// The meta of a video of class `cls` (-1: no label), with a second entry
// that must be ignored.
std::string MetaList(int cls, std::mt19937& rng, const std::string& id) {
  std::string entry = "{\"id\": \"" + id + "\"";
  if (cls >= 0) {
    const auto& spellings = Classes()[static_cast<size_t>(cls)].spellings;
    const std::string& v = spellings[rng() % spellings.size()];
    const std::string& w = spellings[rng() % spellings.size()];
    entry += ", \"label\": " + v + ", \"mirror\": " + w;
  }
  entry += "}";
  return "[" + entry + ", {\"label\": \"cat\", \"mirror\": \"cat\"}]";
}

void Append(Writer& w, Model* model, const std::string& id, int cls, std::mt19937& rng) {
  const std::vector<std::string> frames = {FakeJpeg(30 + rng() % 20, static_cast<uint32_t>(rng()))};
  if (w.AppendEntry(id, test::Views(frames), MetaList(cls, rng, id))) model->Set(id, cls);
}

int RandomClass(std::mt19937& rng) { return static_cast<int>(rng() % (Classes().size() + 1)) - 1; }

// Select by "label" (indexed where asked) and by "mirror" (never indexed)
// both give the model's answer for every spelling of every class; AND and OR
// too; and `check` finds the query databases consistent.
void Verify(const Dataset& ds, const Model& model, const std::string& when) {
  BOOST_TEST_CONTEXT(when) {
    BOOST_TEST(ds.Count() == model.size());
    for (size_t c = 0; c < Classes().size(); ++c) {
      const std::vector<std::string> expected = model.Expected(ds, static_cast<int>(c));
      for (const std::string& spelling : Classes()[c].spellings) {
        BOOST_TEST_CONTEXT("class " << Classes()[c].name << " as " << spelling.substr(0, 20)) {
          BOOST_TEST(ds.Select("label", spelling) == expected, boost::test_tools::per_element());
          BOOST_TEST(ds.Select("mirror", spelling) == expected, boost::test_tools::per_element());
          BOOST_TEST(ds.Select({MetaCondition::Equals("label", spelling),
                                MetaCondition::Equals("mirror", spelling)}) == expected,
                     boost::test_tools::per_element());
        }
      }
    }
    // OR within a condition, AND across: cat or dog, and not three.
    std::vector<std::string> cat_or_dog;
    for (const std::string& id : ds.Ids()) {
      const int cls = model.Get(id);
      if (cls == 0 || cls == 1) cat_or_dog.push_back(id);
    }
    const MetaCondition either{"label", {"\"cat\"", "\"dog\""}};
    BOOST_TEST(ds.Select({either}) == cat_or_dog, boost::test_tools::per_element());
    BOOST_TEST(ds.Select({either, MetaCondition{"mirror", {"\"dog\"", "\"cat\""}}}) == cat_or_dog,
               boost::test_tools::per_element());
    BOOST_TEST(ds.Select({either, MetaCondition::Equals("label", "3")}).empty());
    BOOST_TEST(ds.Select("label", "\"no such label\"").empty());
    BOOST_TEST(ds.Select(std::vector<MetaCondition>{}) == ds.Ids(),
               boost::test_tools::per_element());
    BOOST_TEST(ds.Select(Query()) == ds.Ids(), boost::test_tools::per_element());
    const CheckReport report = Check(ds.dir());
    for (const CheckProblem& p : report.problems) BOOST_ERROR(p.where + ": " + p.what);
  }
}

std::unique_ptr<Dataset> OpenRw(const std::string& dir) {
  OpenOptions o;
  o.read_only = false;
  return Dataset::Open(dir, o);
}

BOOST_AUTO_TEST_SUITE(query_test)

BOOST_AUTO_TEST_CASE(select_agrees_with_the_model_through_every_writer_path) {
  TempDir tmp;
  CreateOptions c;
  c.videos_per_chunk = 7;
  auto ds = Dataset::Create(tmp / "d", c);
  std::mt19937 rng(7);
  Model model;
  {
    auto w = ds->NewWriter();
    for (int i = 0; i < 60; ++i) Append(*w, &model, "v" + std::to_string(i), RandomClass(rng), rng);
    w->Commit();
  }
  Verify(*ds, model, "no index");
  BOOST_TEST(ds->CreateMetaIndex("label"));
  BOOST_TEST(!ds->CreateMetaIndex("label"));  // already there: nothing changes
  BOOST_TEST(ds->MetaIndexes() == std::vector<std::string>{"label"});
  Verify(*ds, model, "index built over existing videos");

  // Appends, removals and replacements, mixed in batches.
  WriterOptions replace;
  replace.on_duplicate = OnDuplicate::kReplace;
  for (int round = 0; round < 4; ++round) {
    auto w = ds->NewWriter(replace);
    for (int k = 0; k < 15; ++k) {
      const int i = static_cast<int>(rng() % 90);
      const std::string id = "v" + std::to_string(i);
      if (rng() % 3 == 0) {
        if (w->Remove(id)) model.Erase(id);
      } else {
        Append(*w, &model, id, RandomClass(rng), rng);  // new, or a replacement
      }
    }
    w->Commit();
    Verify(*ds, model, "after writer round " + std::to_string(round));
  }
  {
    // A rolled-back batch leaves the index as it was.
    auto w = ds->NewWriter(replace);
    Model scratch = model;
    Append(*w, &scratch, "v1", 0, rng);
    Append(*w, &scratch, "rolled_back", 1, rng);
    w->Rollback();
  }
  Verify(*ds, model, "after a rollback");

  // Compaction moves every live video of a chunk with garbage.
  const CompactReport compacted = Compact(*ds);
  BOOST_TEST(compacted.videos_moved > 0u);
  Verify(*ds, model, "after compaction");

  // A second index, then drop the first: the scan answers again.
  BOOST_TEST(ds->CreateMetaIndex("mirror"));
  Verify(*ds, model, "both keys indexed");
  BOOST_TEST(ds->DropMetaIndex("label"));
  BOOST_TEST(!ds->DropMetaIndex("label"));
  BOOST_TEST(ds->MetaIndexes() == std::vector<std::string>{"mirror"});
  Verify(*ds, model, "label index dropped");
}

BOOST_AUTO_TEST_CASE(merge_keeps_the_output_index_when_attaching_and_copying) {
  TempDir tmp;
  std::mt19937 rng(11);
  Model model;
  const std::string out = tmp / "out";
  {
    auto ds = Dataset::Create(out);
    {
      auto w = ds->NewWriter();
      for (int i = 0; i < 20; ++i) {
        Append(*w, &model, "o" + std::to_string(i), RandomClass(rng), rng);
      }
      w->Commit();
    }
    BOOST_TEST(ds->CreateMetaIndex("label"));
  }
  // One shard inside the output (attached), one elsewhere (copied); both
  // hold ids of the output with other labels (replaced).
  const auto make_shard = [&](const std::string& dir, const std::string& prefix) {
    auto shard = Dataset::Create(dir);
    auto w = shard->NewWriter();
    for (int i = 0; i < 12; ++i) {
      const std::string id =
          i < 4 ? "o" + std::to_string(i + (prefix == "a" ? 0 : 4)) : prefix + std::to_string(i);
      const std::vector<std::string> frames = {FakeJpeg(40, static_cast<uint32_t>(i))};
      const int cls = RandomClass(rng);
      w->AppendEntry(id, test::Views(frames), MetaList(cls, rng, id));
      model.Set(id, cls);  // replace wins
    }
    w->Commit();
  };
  fs::create_directories(out + "/shards");
  make_shard(out + "/shards/a", "a");
  make_shard(tmp / "b", "b");
  MergeOptions m;
  m.on_duplicate = OnDuplicate::kReplace;
  const MergeReport r = Merge(out, {out + "/shards/a", tmp / "b"}, m);
  BOOST_TEST(r.chunks_attached > 0u);
  BOOST_TEST(r.videos_copied > 0u);
  Verify(*Dataset::Open(out), model, "after merge");
}

BOOST_AUTO_TEST_CASE(import_builds_the_requested_meta_index) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  fs::copy(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  for (const auto& e : fs::directory_iterator(dir)) {
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  ImportOptions options;
  options.meta_index_keys = {"label"};
  ImportGulpio(dir, options);
  auto ds = Dataset::Open(dir);
  BOOST_TEST(ds->MetaIndexes() == std::vector<std::string>{"label"});
  size_t total = 0;
  for (const char* label : {"circle", "square", "triangle"}) {
    std::vector<std::string> expected;
    for (const std::string& id : ds->Ids()) {
      if (ds->Get(id).meta_data.find(std::string("\"label\": \"") + label + "\"") !=
          std::string::npos) {
        expected.push_back(id);
      }
    }
    BOOST_TEST(!expected.empty());
    total += expected.size();
    BOOST_TEST(ds->Select("label", std::string("\"") + label + "\"") == expected,
               boost::test_tools::per_element());
  }
  BOOST_TEST(total == ds->Count());
  BOOST_TEST(Check(dir).healthy());
  // A bad key is refused before anything is read.
  const std::string dir2 = tmp / "gio2";
  fs::copy(test::FixturesDir() + "/gulpio2_csv_jpeg", dir2);
  ImportOptions bad;
  bad.meta_index_keys = {"label", ""};
  BOOST_CHECK_EXCEPTION(
      ImportGulpio(dir2, bad), InvalidArgumentError, [](const InvalidArgumentError& e) {
        return std::string(e.what()).find("meta key is empty") != std::string::npos;
      });
  BOOST_TEST(!Dataset::Exists(dir2));
}

BOOST_AUTO_TEST_CASE(long_values_are_verified_against_the_record) {
  // A value stored by length and checksum: an entry whose checksum matches
  // but whose video holds another value (a collision) must not be returned.
  TempDir tmp;
  auto ds = Dataset::Create(tmp / "d");
  const std::string a = "\"" + std::string(500, 'x') + "\"";
  const std::string b = "\"" + std::string(499, 'x') + "y\"";
  {
    auto w = ds->NewWriter();
    const std::vector<std::string> f = {FakeJpeg(30, 1)};
    w->Append("a", test::Views(f), "{\"k\": " + a + "}");
    w->Append("b", test::Views(f), "{\"k\": " + b + "}");
    w->Commit();
  }
  BOOST_TEST(ds->CreateMetaIndex("k"));
  BOOST_TEST(ds->Select("k", a) == std::vector<std::string>{"a"});
  BOOST_TEST(ds->Select("k", b) == std::vector<std::string>{"b"});
  // Forge a colliding entry: value a's key, pointing at video b.
  engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
  const engine::QueryDbHandles dbs = impl.query.Load();
  const VideoInfo vb = ds->Get("b");
  impl.env->Update([&](index::Txn& txn) {
    std::string_view field;
    BOOST_REQUIRE(txn.Get(dbs.meta_fields, "k", &field));
    const index::MetaFieldValue f = index::DecodeMetaField(field);
    txn.Put(
        dbs.meta_index,
        index::MetaEntryKey(f.number, f.form, engine::MetaKeyValue(f.form, a), vb.chunk, vb.seq),
        "b");
  });
  BOOST_TEST(ds->Select("k", a) == std::vector<std::string>{"a"});
  // ... and `check` reports the forged entry.
  BOOST_TEST(!Check(ds->dir()).healthy());
}

BOOST_AUTO_TEST_CASE(check_reports_a_missing_index_entry) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp / "d");
  {
    auto w = ds->NewWriter();
    const std::vector<std::string> f = {FakeJpeg(30, 1)};
    w->Append("a", test::Views(f), "{\"k\": 1}");
    w->Append("b", test::Views(f), "{\"k\": 2}");
    w->Commit();
  }
  BOOST_TEST(ds->CreateMetaIndex("k"));
  BOOST_TEST(Check(ds->dir()).healthy());
  engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ds);
  const engine::QueryDbHandles dbs = impl.query.Load();
  impl.env->Update([&](index::Txn& txn) {
    index::Cursor cursor(txn, dbs.meta_index);
    BOOST_REQUIRE(cursor.First());
    const std::string key(cursor.key());
    txn.Del(dbs.meta_index, key);
  });
  const CheckReport report = Check(ds->dir());
  BOOST_REQUIRE(!report.healthy());
  BOOST_TEST(report.problems[0].what.find("missing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(meta_index_keys_are_validated) {
  TempDir tmp;
  auto ds = Dataset::Create(tmp / "d");
  BOOST_CHECK_THROW(ds->CreateMetaIndex(""), InvalidArgumentError);
  BOOST_CHECK_THROW(ds->CreateMetaIndex(std::string(256, 'k')), InvalidArgumentError);
  BOOST_CHECK_THROW(ds->CreateMetaIndex("\xff"), InvalidArgumentError);
  BOOST_TEST(ds->CreateMetaIndex(std::string(255, 'k')));
  BOOST_CHECK_THROW(ds->Select("k", "not json"), InvalidArgumentError);
  // Busy while another writer holds the lock.
  auto w = ds->NewWriter();
  BOOST_CHECK_THROW(ds->CreateMetaIndex("other"), BusyError);
}

BOOST_AUTO_TEST_CASE(select_on_a_dataset_without_query_databases) {
  // A dataset written before the query databases existed has none of them
  // (they are created by the first write that needs them): it reads and
  // writes as before, read-only included.
  TempDir tmp;
  {
    auto ds = Dataset::Create(tmp / "d");
    auto w = ds->NewWriter();
    const std::vector<std::string> f = {FakeJpeg(30, 1)};
    w->Append("a", test::Views(f), "{\"k\": 1}");
    w->Append("b", test::Views(f), "{\"k\": 2}");
    w->Commit();
  }
  {
    auto ro = Dataset::Open(tmp / "d");
    const engine::DatasetImpl& impl = engine::DatasetAccess::Of(*ro);
    impl.query.Refresh(*impl.env);
    BOOST_TEST(!impl.query.Load().has_meta_index());
    BOOST_TEST(!impl.query.Load().has_splits());
    BOOST_TEST(ro->Select("k", "2") == std::vector<std::string>{"b"});
    BOOST_TEST(ro->Splits().empty());
    BOOST_TEST(ro->MetaIndexes().empty());
    BOOST_CHECK_THROW(ro->Split("train"), NameNotFoundError);
    BOOST_CHECK_THROW(ro->CreateMetaIndex("k"), InvalidArgumentError);  // read-only
  }
  // A reader and a writer opened before another process creates the
  // databases see them and keep them right.
  auto reader = Dataset::Open(tmp / "d");
  BOOST_TEST(reader->Splits().empty());
  auto rw = OpenRw(tmp / "d");
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    int status = 0;
    try {
      auto child = OpenRw(tmp / "d");
      child->CreateMetaIndex("k");
      auto w = child->NewWriter();
      w->SetSplit("train", {"a"});
      w->Commit();
    } catch (...) {
      status = 1;
    }
    _exit(status);
  }
  int status = 0;
  BOOST_REQUIRE(waitpid(pid, &status, 0) == pid);
  BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  BOOST_TEST(reader->MetaIndexes() == std::vector<std::string>{"k"});
  BOOST_TEST(reader->Split("train") == std::vector<std::string>{"a"});
  {
    auto w = rw->NewWriter();
    const std::vector<std::string> f = {FakeJpeg(30, 2)};
    w->Append("c", test::Views(f), "{\"k\": 2}");
    w->Remove("a");
    w->Commit();
  }
  BOOST_TEST(reader->Select("k", "2") == (std::vector<std::string>{"b", "c"}));
  BOOST_TEST(reader->Split("train").empty());
  BOOST_TEST(Check(tmp / "d").healthy());
}

// ---- splits ------------------------------------------------------------------------

std::unique_ptr<Dataset> WithVideos(const std::string& dir, int n, uint32_t per_chunk = 100) {
  CreateOptions c;
  c.videos_per_chunk = per_chunk;
  auto ds = Dataset::Create(dir, c);
  auto w = ds->NewWriter();
  for (int i = 0; i < n; ++i) {
    const std::vector<std::string> f = {FakeJpeg(30 + static_cast<size_t>(i), 1)};
    w->Append("v" + std::to_string(i), test::Views(f),
              "{\"label\": " + std::to_string(i % 3) + "}");
  }
  w->Commit();
  return ds;
}

BOOST_AUTO_TEST_CASE(absent_meta_keys_names_the_keys_no_video_has_with_or_without_an_index) {
  TempDir tmp;
  auto ds = WithVideos(tmp / "d", 7, 3);
  {
    auto w = ds->NewWriter();
    const std::vector<std::string> f = {FakeJpeg(99, 1)};
    w->Append("late", test::Views(f), R"({"label": 1, "template": "push"})");
    w->Commit();
  }
  const std::vector<std::string> keys = {"template", "label", "templat", "idx"};
  BOOST_TEST(ds->AbsentMetaKeys(keys) == (std::vector<std::string>{"templat", "idx"}));
  BOOST_TEST(ds->AbsentMetaKeys({}).empty());
  ds->CreateMetaIndex("template");
  ds->CreateMetaIndex("idx");
  BOOST_TEST(ds->AbsentMetaKeys(keys) == (std::vector<std::string>{"templat", "idx"}));
  ds->Remove({"late"});
  BOOST_TEST(ds->AbsentMetaKeys(keys) == (std::vector<std::string>{"template", "templat", "idx"}));
  BOOST_CHECK_THROW(ds->AbsentMetaKeys({std::string("caf\xe9")}), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(a_split_keeps_the_given_order_and_replaces_one_of_its_name) {
  TempDir tmp;
  auto ds = WithVideos(tmp / "d", 10);
  {
    auto w = ds->NewWriter();
    w->SetSplit("train", {"v5", "v1", "v9", "v0"});
    w->SetSplit("val", {"v2"});
    BOOST_TEST(ds->Splits().empty());  // not before the commit
    w->Commit();
  }
  BOOST_TEST(ds->Split("train") == (std::vector<std::string>{"v5", "v1", "v9", "v0"}));
  const std::vector<SplitInfo> splits = ds->Splits();
  BOOST_REQUIRE(splits.size() == 2u);
  BOOST_TEST(splits[0].name == "train");
  BOOST_TEST(splits[0].count == 4u);
  BOOST_TEST(splits[1].name == "val");
  {
    auto w = ds->NewWriter();
    w->SetSplit("train", {"v3", "v4"});
    w->Commit();
  }
  BOOST_TEST(ds->Split("train") == (std::vector<std::string>{"v3", "v4"}));
  {
    auto w = ds->NewWriter();
    BOOST_TEST(w->RemoveSplit("val"));
    BOOST_TEST(!w->RemoveSplit("val"));  // removed in this batch already
    BOOST_TEST(!w->RemoveSplit("nope"));
    w->Commit();
  }
  BOOST_CHECK_EXCEPTION(ds->Split("val"), NameNotFoundError, [](const NameNotFoundError& e) {
    return std::string(e.what()).find("known splits: train") != std::string::npos;
  });
  BOOST_TEST(Check(ds->dir()).healthy());
}

BOOST_AUTO_TEST_CASE(a_split_with_missing_ids_is_refused_whole) {
  TempDir tmp;
  auto ds = WithVideos(tmp / "d", 5);
  auto w = ds->NewWriter();
  w->SetSplit("train", {"v0", "v1"});
  BOOST_CHECK_EXCEPTION(w->SetSplit("val", {"v2", "ghost", "v3", "phantom"}), IdNotFoundError,
                        [](const IdNotFoundError& e) {
                          const std::string m = e.what();
                          return m.find("2 ids") != std::string::npos &&
                                 m.find("'ghost'") != std::string::npos &&
                                 m.find("'phantom'") != std::string::npos &&
                                 m.find("'v2'") == std::string::npos;
                        });
  BOOST_CHECK_THROW(w->SetSplit("dup", {"v1", "v2", "v1"}), InvalidArgumentError);
  BOOST_CHECK_THROW(w->SetSplit("", {"v1"}), InvalidArgumentError);
  w->Commit();  // the refused calls left nothing behind; the first one stays
  w.reset();
  const std::vector<SplitInfo> splits = ds->Splits();
  BOOST_REQUIRE(splits.size() == 1u);
  BOOST_TEST(splits[0].name == "train");
  // Ids appended or removed earlier in the batch count as they will be.
  auto w2 = ds->NewWriter();
  const std::vector<std::string> f = {FakeJpeg(30, 9)};
  w2->Append("new", test::Views(f));
  w2->Remove("v4");
  w2->SetSplit("mixed", {"new", "v3"});
  BOOST_CHECK_THROW(w2->SetSplit("gone", {"v4"}), IdNotFoundError);
  w2->Commit();
  BOOST_TEST(ds->Split("mixed") == (std::vector<std::string>{"new", "v3"}));
}

BOOST_AUTO_TEST_CASE(removing_a_video_removes_it_from_every_split) {
  TempDir tmp;
  auto ds = WithVideos(tmp / "d", 12, 4);
  {
    auto w = ds->NewWriter();
    w->SetSplit("a", {"v0", "v1", "v2", "v3"});
    w->SetSplit("b", {"v3", "v2", "v8"});
    w->Commit();
  }
  BOOST_TEST(ds->Remove({"v2"}) == 1u);
  BOOST_TEST(ds->Split("a") == (std::vector<std::string>{"v0", "v1", "v3"}));
  BOOST_TEST(ds->Split("b") == (std::vector<std::string>{"v3", "v8"}));
  BOOST_TEST(ds->Splits()[0].count == 3u);
  BOOST_TEST(ds->Splits()[1].count == 2u);
  {
    // Set, then removed later in the same batch: it leaves the new split too.
    auto w = ds->NewWriter();
    w->SetSplit("c", {"v8", "v9"});
    w->Remove("v9");
    w->Commit();
  }
  BOOST_TEST(ds->Split("c") == std::vector<std::string>{"v8"});
  {
    // A replacement is the same id: it stays in its splits; so does a
    // video moved by compaction.
    WriterOptions o;
    o.on_duplicate = OnDuplicate::kReplace;
    auto w = ds->NewWriter(o);
    const std::vector<std::string> f = {FakeJpeg(33, 5)};
    w->Append("v8", test::Views(f), "{\"label\": 9}");
    w->Commit();
  }
  Compact(*ds);
  BOOST_TEST(ds->Split("b") == (std::vector<std::string>{"v3", "v8"}));
  BOOST_TEST(ds->Split("c") == std::vector<std::string>{"v8"});
  BOOST_TEST(Check(ds->dir()).healthy());
}

BOOST_AUTO_TEST_CASE(splits_alone_commit_on_an_empty_dataset) {
  // A batch of split changes only, before any chunk exists: the next writer
  // must still open (the batch must not record a chunk that does not exist).
  TempDir tmp;
  auto ds = Dataset::Create(tmp / "d");
  {
    auto w = ds->NewWriter();
    w->SetSplit("empty", {});
    w->Commit();
  }
  BOOST_TEST(ds->Splits().size() == 1u);
  auto w = ds->NewWriter();
  const std::vector<std::string> f = {FakeJpeg(30, 1)};
  w->Append("a", test::Views(f));
  w->Commit();
  BOOST_TEST(Check(ds->dir()).healthy());
}

BOOST_AUTO_TEST_CASE(splits_survive_export_and_import) {
  TempDir tmp;
  auto ds = WithVideos(tmp / "d", 9, 4);
  {
    auto w = ds->NewWriter();
    w->SetSplit("train", {"v8", "v0", "v4", "v2"});
    w->SetSplit("caf\xc3\xa9", {"v1"});
    w->Commit();
  }
  const std::string out = tmp / "export";
  fs::create_directories(out);
  const ExportReport r = ExportGmeta(*ds, out);
  BOOST_TEST(r.splits == 2u);
  BOOST_TEST(fs::exists(out + "/" + engine::kSplitsFileName));
  // The .gmeta files point into the dataset's data files: copy them over.
  for (const auto& e : fs::directory_iterator(ds->dir())) {
    if (e.path().extension() == ".gulp")
      fs::copy_file(e.path(), out + "/" + e.path().filename().string());
  }
  const ImportReport imported = ImportGulpio(out);
  BOOST_TEST(imported.splits == 2u);
  auto back = Dataset::Open(out);
  BOOST_TEST(back->Split("train") == (std::vector<std::string>{"v8", "v0", "v4", "v2"}));
  BOOST_TEST(back->Split("caf\xc3\xa9") == std::vector<std::string>{"v1"});
  // No split any more: the next export removes the stale file.
  {
    auto w = ds->NewWriter();
    w->RemoveSplit("train");
    w->RemoveSplit("caf\xc3\xa9");
    w->Commit();
  }
  ExportGmeta(*ds, out);
  BOOST_TEST(!fs::exists(out + "/" + engine::kSplitsFileName));
}

BOOST_AUTO_TEST_CASE(import_refuses_a_splits_file_naming_missing_ids) {
  TempDir tmp;
  const std::string dir = tmp / "gio";
  fs::copy(test::FixturesDir() + "/gulpio2_csv_jpeg", dir);
  for (const auto& e : fs::directory_iterator(dir)) {
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  const std::string file = dir + "/" + engine::kSplitsFileName;
  test::WriteFile(
      file,
      R"({"format": "gulpdb splits", "version": 1, "splits": {"train": ["0", "nope", "1"]}})");
  BOOST_CHECK_EXCEPTION(ImportGulpio(dir), InvalidArgumentError, [](const InvalidArgumentError& e) {
    const std::string m = e.what();
    return m.find("'train'") != std::string::npos && m.find("'nope'") != std::string::npos;
  });
  BOOST_TEST(!Dataset::Exists(dir));  // all or nothing
  for (const char* bad :
       {"not json", R"({"version": 2, "splits": {}})", R"({"version": 1})",
        R"({"version": 1, "splits": {"a": "0"}})", R"({"version": 1, "splits": {"a": [0]}})",
        R"({"version": 1, "splits": {"a": ["0", "0"]}})",
        R"({"version": 1, "splits": {"a": ["0"], "a": ["1"]}})"}) {
    test::WriteFile(file, bad);
    BOOST_CHECK_THROW(ImportGulpio(dir), InvalidArgumentError);
    BOOST_TEST(!Dataset::Exists(dir));
  }
  test::WriteFile(file,
                  R"({"format": "gulpdb splits", "version": 1, "splits": {"train": ["1", "0"]}})");
  ImportGulpio(dir);
  BOOST_TEST(Dataset::Open(dir)->Split("train") == (std::vector<std::string>{"1", "0"}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb
