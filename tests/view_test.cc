// The viewer's room (view/): the token and its cookie, the text escapes, the
// grid's pages and their cache, the API's answers and errors, the charts,
// the server's start and stop, and the static report (including a failure
// part way, which must leave nothing behind). The page in a real browser:
// tests/python/test_view_browser.py.
#include "view/view.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "tests/support/test_util.h"
#include "util/file_io.h"
#include "view/api.h"
#include "view/charts.h"
#include "view/listing.h"
#include "view/text.h"
#include "view/token.h"

namespace gulpdb::view {
namespace {

using test::Contains;
using test::TempDir;

std::string Jpeg(int width, int height, int seed) {
  std::vector<uint8_t> px(static_cast<size_t>(width * height * 3));
  for (size_t i = 0; i < px.size(); ++i) {
    px[i] = static_cast<uint8_t>((i / 3 + static_cast<size_t>(seed) * 50) % 256);
  }
  return ThreadLocalEncoder().Encode(px.data(), width, height, 3);
}

// 30 videos v00..v29 of 1 + i % 4 frames (320x240), labels cat/dog/owl by i % 3,
// split "train" of every odd one (in reverse order).
struct Fixture {
  TempDir tmp;
  std::shared_ptr<const Dataset> ds;
  Fixture() {
    {
      CreateOptions create;
      create.videos_per_chunk = 7;
      auto rw = Dataset::Create(tmp / "ds", create);
      auto w = rw->NewWriter();
      std::vector<std::string> train;
      for (int i = 0; i < 30; ++i) {
        const std::string id = (i < 10 ? "v0" : "v") + std::to_string(i);
        std::vector<std::string> frames;
        for (int k = 0; k < 1 + i % 4; ++k) frames.push_back(Jpeg(320, 240, i + k));
        static const char* const kLabels[] = {"cat", "dog", "owl"};
        w->Append(id, test::Views(frames), std::string("{\"label\": \"") + kLabels[i % 3] + "\"}");
        if (i % 2 == 1) train.insert(train.begin(), id);
      }
      w->SetSplit("train", train);
      w->Commit();
    }
    ds = Dataset::Open(tmp / "ds");
  }
  void Append(const std::string& id, const std::string& label) const {
    OpenOptions o;
    o.read_only = false;
    auto rw = Dataset::Open(tmp / "ds", o);
    auto w = rw->NewWriter();
    w->Append(id, {Jpeg(64, 48, 9)}, "{\"label\": \"" + label + "\"}");
    w->Commit();
  }
};

Api::Params NoParams() {
  return [](const char*) -> std::optional<std::string> { return std::nullopt; };
}
Api::Params ParamsOf(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

BOOST_AUTO_TEST_SUITE(view_test)

BOOST_AUTO_TEST_CASE(tokens_are_256_random_bits_in_url_safe_base64) {
  // RFC 4648's test vectors, in the URL-safe alphabet without padding.
  BOOST_TEST(Base64Url("") == "");
  BOOST_TEST(Base64Url("f") == "Zg");
  BOOST_TEST(Base64Url("fo") == "Zm8");
  BOOST_TEST(Base64Url("foo") == "Zm9v");
  BOOST_TEST(Base64Url("foob") == "Zm9vYg");
  BOOST_TEST(Base64Url("fooba") == "Zm9vYmE");
  BOOST_TEST(Base64Url("foobar") == "Zm9vYmFy");
  BOOST_TEST(Base64Url("\xfb\xff\xbf") == "-_-_");
  // The padded standard alphabet, for data: URLs.
  BOOST_TEST(Base64("f") == "Zg==");
  BOOST_TEST(Base64("fo") == "Zm8=");
  BOOST_TEST(Base64("foo") == "Zm9v");
  BOOST_TEST(Base64("foob") == "Zm9vYg==");
  BOOST_TEST(Base64("\xfb\xff\xbf") == "+/+/");
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    const std::string token = NewToken();
    BOOST_TEST(token.size() == 43u);  // 256 bits
    BOOST_TEST(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789-_") == std::string::npos);
    seen.insert(token);
  }
  BOOST_TEST(seen.size() == 50u);
  BOOST_TEST(TokenMatches("abc", "abc"));
  BOOST_TEST(!TokenMatches("abd", "abc"));
  BOOST_TEST(!TokenMatches("ab", "abc"));
  BOOST_TEST(!TokenMatches("", ""));
}

BOOST_AUTO_TEST_CASE(the_cookie_is_named_after_the_port_and_read_back) {
  BOOST_TEST(SetCookieValue(8080, "tok") ==
             "gulpdb_view_8080=tok; Path=/; HttpOnly; SameSite=Strict");
  BOOST_TEST(CookieValue("a=1; gulpdb_view_8080=tok; b=2", "gulpdb_view_8080") == "tok");
  BOOST_TEST(CookieValue("gulpdb_view_80800=x; gulpdb_view_8080=y", "gulpdb_view_8080") == "y");
  BOOST_TEST(CookieValue("gulpdb_view_8081=tok", "gulpdb_view_8080") == "");
  BOOST_TEST(CookieValue("", "gulpdb_view_8080") == "");
}

BOOST_AUTO_TEST_CASE(text_is_escaped_for_where_it_goes) {
  BOOST_TEST(JsonString("a\"b\\\n\xc3\xa9") == "\"a\\\"b\\\\\\n\\u00e9\"");
  BOOST_TEST(JsonString("bad \xff byte") == "\"bad \\ufffd byte\"");
  BOOST_TEST(HtmlEscape("<a href='x'>&\"</a>") ==
             "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  BOOST_TEST(PercentEncode("../a b/\xff~") == "..%2Fa%20b%2F%FF~");
  BOOST_TEST(Shorten("abcdef", 3) == "abc\xe2\x80\xa6");
  BOOST_TEST(Shorten("\xc3\xa9\xc3\xa9", 1) == "\xc3\xa9\xe2\x80\xa6");
  BOOST_TEST(Shorten("abc", 3) == "abc");
  BOOST_TEST(*ParseCount("0", 10) == 0u);
  BOOST_TEST(*ParseCount("10", 10) == 10u);
  for (const char* bad :
       {"", "11", "-1", "+1", "1.5", "1e3", " 1", "0x1", "99999999999999999999999"}) {
    BOOST_TEST(!ParseCount(bad, 10).has_value(), bad);
  }
  BOOST_TEST(*ParseCount("18446744073709551615", UINT64_MAX) == UINT64_MAX);
  BOOST_TEST(!ParseCount("18446744073709551616", UINT64_MAX).has_value());
}

BOOST_AUTO_TEST_CASE(pages_come_by_position_from_the_dataset_a_filter_or_a_split) {
  Fixture f;
  Listing listing(f.ds);
  const Listing::Page first = listing.Get("", "", 0, 4);
  BOOST_TEST(first.total == 30u);
  BOOST_TEST(first.ids == (std::vector<std::string>{"v00", "v01", "v02", "v03"}));
  BOOST_TEST(listing.Get("", "", 28, 10).ids == (std::vector<std::string>{"v28", "v29"}));
  BOOST_TEST(listing.Get("", "", 30, 10).ids.empty());
  BOOST_TEST(listing.Get("", "", uint64_t{1} << 60, 10).ids.empty());
  const Listing::Page dogs = listing.Get("label=dog", "", 1, 3);
  BOOST_TEST(dogs.total == 10u);
  BOOST_TEST(dogs.ids == (std::vector<std::string>{"v04", "v07", "v10"}));
  const Listing::Page train = listing.Get("", "train", 0, 2);
  BOOST_TEST(train.total == 15u);
  BOOST_TEST(train.ids == (std::vector<std::string>{"v29", "v27"}));
  // Both: the split's order, the filter's videos.
  const Listing::Page both = listing.Get("label=dog", "train", 0, 10);
  BOOST_TEST(both.ids == (std::vector<std::string>{"v25", "v19", "v13", "v07", "v01"}));
  BOOST_CHECK_THROW(listing.Get("label", "", 0, 1), InvalidArgumentError);
  BOOST_CHECK_THROW(listing.Get("", "nope", 0, 1), NameNotFoundError);
}

BOOST_AUTO_TEST_CASE(the_filter_box_takes_the_query_language_and_the_older_term) {
  Fixture f;
  Listing listing(f.ds, 8);
  // Cats (i % 3 == 0: 10) or videos of 4 frames (i % 4 == 3: 7), 3 of them both.
  const Listing::Page page = listing.Get("label = 'cat' or frames >= 4", "", 0, 30);
  BOOST_TEST(page.total == 14u);
  std::vector<std::string> expected;
  for (int i = 0; i < 30; ++i) {
    if (i % 3 == 0 || i % 4 == 3) expected.push_back((i < 10 ? "v0" : "v") + std::to_string(i));
  }
  BOOST_TEST(page.ids == expected);
  BOOST_TEST(listing.Get("not label in ('cat', 'dog')", "", 0, 1).total == 10u);
  BOOST_TEST(listing.Get("label=owl", "", 0, 1).total == 10u);  // --where's KEY=VALUE
  BOOST_CHECK_THROW(listing.Get("frames >=", "", 0, 1), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(a_filtered_list_is_kept_until_a_commit) {
  Fixture f;
  Listing listing(f.ds);
  BOOST_TEST(listing.Get("label=owl", "", 0, 2).total == 10u);
  BOOST_TEST(listing.Get("label=owl", "", 2, 2).total == 10u);
  BOOST_TEST(listing.computed() == 1u);  // the second page came from the cache
  f.Append("new", "owl");
  const Listing::Page after = listing.Get("label=owl", "", 10, 5);
  BOOST_TEST(listing.computed() == 2u);
  BOOST_TEST(after.total == 11u);
  BOOST_TEST(after.ids == (std::vector<std::string>{"new"}));
  // Without a filter there is nothing to keep: the count is read each time.
  BOOST_TEST(listing.Get("", "", 0, 1).total == 31u);
}

BOOST_AUTO_TEST_CASE(a_list_larger_than_the_cache_is_not_kept) {
  Fixture f;
  Listing tiny(f.ds, 8, /*max_cached_bytes=*/64);
  BOOST_TEST(tiny.Get("label=cat", "", 0, 1).total == 10u);
  BOOST_TEST(tiny.Get("label=cat", "", 1, 1).total == 10u);
  BOOST_TEST(tiny.computed() == 2u);
}

BOOST_AUTO_TEST_CASE(the_api_answers_json_images_and_clear_errors) {
  Fixture f;
  Api api(f.ds, ShowOptions{});
  const Reply info = api.Handle("/api/info", NoParams());
  BOOST_TEST(info.status == 200);
  BOOST_TEST(Contains(info.body, "\"videos\": 30"));
  BOOST_TEST(Contains(info.body, "{\"name\": \"train\", \"count\": 15}"));
  const Reply page = api.Handle("/api/videos", ParamsOf({{"start", "29"}, {"count", "5"}}));
  BOOST_TEST(page.status == 200);
  BOOST_TEST(Contains(page.body, "\"total\": 30"));
  BOOST_TEST(Contains(page.body, "\"id\": \"v29\""));
  BOOST_TEST(Contains(page.body, "\"frames\": 2"));
  BOOST_TEST(Contains(page.body, R"("meta": "[{\"label\": \"owl\"}]")"));
  const Reply frame = api.Handle("/api/frame", ParamsOf({{"id", "v29"}, {"frame", "1"}}));
  BOOST_TEST(frame.status == 200);
  BOOST_TEST(frame.content_type == "image/jpeg");
  ThumbnailOptions thumb;
  thumb.max_side = 160;
  BOOST_TEST(frame.body ==
             std::string(f.ds->ReadThumbnails("v29", Selection::Indices({1}), thumb)[0]));
  const Reply full =
      api.Handle("/api/frame", ParamsOf({{"id", "v29"}, {"frame", "1"}, {"max", "0"}}));
  BOOST_TEST(full.body == std::string(f.ds->ReadJpegs("v29", Selection::Indices({1}))[0]));
  BOOST_TEST(Contains(api.Handle("/api/video", ParamsOf({{"id", "v03"}})).body, "\"bytes\": "));
  const Reply check = api.Handle("/api/check", ParamsOf({{"id", "v03"}}));
  BOOST_TEST(Contains(check.body, "\"healthy\": true"));
  BOOST_TEST(Contains(check.body, "\"frames\": 4"));

  // Errors: status, kind, and what was wrong.
  const auto status = [&](const char* path, std::map<std::string, std::string> params) {
    return api.Handle(path, ParamsOf(std::move(params))).status;
  };
  BOOST_TEST(status("/api/frame", {{"id", "../../etc/passwd"}}) == 404);
  BOOST_TEST(status("/api/frame", {{"id", "v01"}, {"frame", "2"}}) == 404);  // v01 has 2 frames
  BOOST_TEST(status("/api/frame", {}) == 400);
  BOOST_TEST(status("/api/frame", {{"id", ""}}) == 400);
  BOOST_TEST(status("/api/frame", {{"id", "v01"}, {"frame", "-1"}}) == 400);
  BOOST_TEST(status("/api/frame", {{"id", "v01"}, {"max", "5000"}}) == 400);
  BOOST_TEST(status("/api/video", {{"id", "nope"}}) == 404);
  BOOST_TEST(status("/api/check", {{"id", "nope"}}) == 404);
  BOOST_TEST(status("/api/videos", {{"count", "0"}}) == 400);
  BOOST_TEST(status("/api/videos", {{"count", "501"}}) == 400);
  BOOST_TEST(status("/api/videos", {{"start", "x"}}) == 400);
  BOOST_TEST(status("/api/videos", {{"split", "nope"}}) == 404);
  BOOST_TEST(status("/api/../etc/passwd", {}) == 404);
  BOOST_TEST(status("/api/nothing", {}) == 404);
  const Reply bad = api.Handle("/api/videos", ParamsOf({{"filter", "label"}}));
  BOOST_TEST(bad.status == 400);
  BOOST_TEST(Contains(bad.body, "expected an operator"));
  BOOST_TEST(Contains(bad.body, "\"kind\": \"invalid argument\""));
}

BOOST_AUTO_TEST_CASE(charts_count_labels_and_frames_in_the_background) {
  Fixture f;
  ChartScan scan(f.ds, "label");
  ChartScan::Status status = scan.Poll();
  for (int i = 0; i < 10000 && status.running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    status = scan.Poll();
  }
  BOOST_REQUIRE(!status.running);
  BOOST_TEST(status.error == "");
  BOOST_TEST(status.data.scanned == 30u);
  BOOST_TEST(status.data.labels.size() == 3u);
  for (const MetaValueCount& v : status.data.labels) BOOST_TEST(v.count == 10u);
  BOOST_TEST((status.data.frames == std::map<uint32_t, uint64_t>{{1, 8}, {2, 8}, {3, 7}, {4, 7}}));
  const std::string labels = LabelChartSvg(status.data, "label", 24);
  BOOST_TEST(Contains(labels, "data-value=\"&quot;cat&quot;\""));
  BOOST_TEST(Contains(labels, ">cat</text>"));
  BOOST_TEST(Contains(FramesChartSvg(status.data), "4 frames: 7 videos"));
  // A commit starts a new count on the next poll.
  f.Append("new", "emu");
  status = scan.Poll();
  for (int i = 0; i < 10000 && status.running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    status = scan.Poll();
  }
  BOOST_TEST(status.data.scanned == 31u);
  BOOST_TEST(status.data.labels.size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_label_chart_names_what_it_leaves_out) {
  ChartData data;
  data.total = data.scanned = 12;
  for (int i = 0; i < 5; ++i) {
    data.labels.push_back(MetaValueCount{"\"l" + std::to_string(i) + "\"",
                                         "<l" + std::to_string(i) + ">",
                                         static_cast<uint64_t>(5 - i)});
  }
  data.labels_missing = 3;
  const std::string svg = LabelChartSvg(data, "label", 2);
  BOOST_TEST(Contains(svg, "&lt;l0&gt;"));
  BOOST_TEST(!Contains(svg, "<l0>"));
  BOOST_TEST(Contains(svg, "3 more values: 6 videos"));
  BOOST_TEST(Contains(svg, "3 videos without &#39;label&#39;"));
}

BOOST_AUTO_TEST_CASE(a_server_starts_on_a_free_port_and_stops_twice) {
  Fixture f;
  ServerOptions options;
  std::unique_ptr<Server> server = Server::Start(f.ds, options);
  BOOST_TEST(server->port() > 0);
  BOOST_TEST(server->url() ==
             "http://127.0.0.1:" + std::to_string(server->port()) + "/?token=" + server->token());
  // The port is taken: a second server on it cannot listen, and says where.
  options.port = server->port();
  try {
    Server::Start(f.ds, options);
    BOOST_FAIL("two servers listened on one port");
  } catch (const IoError& e) {
    BOOST_TEST(Contains(e.what(), "port " + std::to_string(options.port)));
  }
  server->Stop();
  server->Stop();
}

BOOST_AUTO_TEST_CASE(a_server_refuses_bad_options_and_a_writable_dataset) {
  Fixture f;
  const auto refused = [&](const ServerOptions& options) {
    BOOST_CHECK_THROW(Server::Start(f.ds, options), InvalidArgumentError);
  };
  ServerOptions o;
  o.port = -1;
  refused(o);
  o.port = 65536;
  refused(o);
  o = ServerOptions{};
  o.threads = 0;
  refused(o);
  o = ServerOptions{};
  o.show.thumb_side = 8;
  refused(o);
  o = ServerOptions{};
  o.host = "";
  refused(o);
  OpenOptions rw;
  rw.read_only = false;
  BOOST_CHECK_THROW(Server::Start(Dataset::Open(f.tmp / "ds", rw), ServerOptions{}),
                    InvalidArgumentError);
  o = ServerOptions{};
  o.host = "192.0.2.1";  // TEST-NET-1: not an address of this machine
  BOOST_CHECK_THROW(Server::Start(f.ds, o), IoError);
  BOOST_TEST(IsLoopbackHost("127.0.0.1"));
  BOOST_TEST(IsLoopbackHost("127.1.2.3"));
  BOOST_TEST(IsLoopbackHost("::1"));
  BOOST_TEST(IsLoopbackHost("localhost"));
  BOOST_TEST(!IsLoopbackHost("0.0.0.0"));
  BOOST_TEST(!IsLoopbackHost("127.0.0.1.example.com"));
  BOOST_TEST(!IsLoopbackHost("10.0.0.1"));
}

BOOST_AUTO_TEST_CASE(a_static_report_is_a_folder_that_needs_no_network) {
  Fixture f;
  StaticReportOptions options;
  options.limit = 4;
  options.where = "label=dog";
  const StaticReport report = WriteStaticReport(*f.ds, f.tmp / "out", options);
  BOOST_TEST(report.matched == 10u);
  BOOST_TEST(report.shown == 4u);
  BOOST_TEST(report.damaged == 0u);
  BOOST_TEST(util::ListDirectory(f.tmp / "out") ==
             (std::vector<std::string>{"index.html", "thumbs"}));
  BOOST_TEST(util::ListDirectory(f.tmp / "out/thumbs").size() == 4u);
  const std::string html = test::ReadFile(f.tmp / "out/index.html");
  for (const char* id : {"v01", "v04", "v07", "v10"}) BOOST_TEST(Contains(html, id));
  BOOST_TEST(!Contains(html, "v13"));
  BOOST_TEST(Contains(html, "src=\"thumbs/000003.jpg\""));
  BOOST_TEST(Contains(html, "<svg"));
  BOOST_TEST(!Contains(html, "http:"));
  BOOST_TEST(!Contains(html, "https:"));
  BOOST_TEST(!Contains(html, "//"));  // no protocol-relative reference either
  // v04 has 1 + 4 % 4 = 1 frame, v07 4: the middle frame of each.
  ThumbnailOptions thumb;
  thumb.max_side = 160;
  BOOST_TEST(test::ReadFile(f.tmp / "out/thumbs/000002.jpg") ==
             std::string(f.ds->ReadThumbnails("v07", Selection::Indices({2}), thumb)[0]));
  // Only beside the report: no work directory is left.
  BOOST_TEST(util::ListDirectory(f.tmp.path()) == (std::vector<std::string>{"ds", "out"}));
}

BOOST_AUTO_TEST_CASE(a_static_report_refuses_a_used_destination) {
  Fixture f;
  StaticReportOptions options;
  util::MakeDirectory(f.tmp / "full");
  test::WriteFile(f.tmp / "full/keep.txt", "mine");
  BOOST_CHECK_THROW(WriteStaticReport(*f.ds, f.tmp / "full", options), InvalidArgumentError);
  BOOST_TEST(util::ListDirectory(f.tmp / "full") == (std::vector<std::string>{"keep.txt"}));
  test::WriteFile(f.tmp / "file", "x");
  BOOST_CHECK_THROW(WriteStaticReport(*f.ds, f.tmp / "file", options), InvalidArgumentError);
  BOOST_CHECK_THROW(WriteStaticReport(*f.ds, f.tmp / "no/such/out", options), NotFoundError);
  options.limit = 0;
  BOOST_CHECK_THROW(WriteStaticReport(*f.ds, f.tmp / "new", options), InvalidArgumentError);
  options.limit = 3;
  options.where = "label";
  BOOST_CHECK_THROW(WriteStaticReport(*f.ds, f.tmp / "new", options), InvalidArgumentError);
  // An empty directory is taken.
  util::MakeDirectory(f.tmp / "empty");
  options.where = "";
  BOOST_TEST(WriteStaticReport(*f.ds, f.tmp / "empty", options).shown == 3u);
  BOOST_TEST(util::PathExists(f.tmp / "empty/index.html"));
  BOOST_TEST(util::ListDirectory(f.tmp.path()) ==
             (std::vector<std::string>{"ds", "empty", "file", "full"}));
}

// Fails the write whose count reaches `*countdown` (ENOSPC).
util::fault::Injection FailNthWrite(util::fault::Op op, const std::string&, uint64_t, size_t,
                                    void* context) {
  auto* countdown = static_cast<int*>(context);
  if (op == util::fault::Op::kWrite && --*countdown == 0) return {ENOSPC, SIZE_MAX};
  return {};
}

BOOST_AUTO_TEST_CASE(a_failed_static_report_leaves_nothing_behind) {
  for (const int failing_write : {1, 3, 6}) {  // a thumbnail, another, the page itself
    Fixture f;
    util::MakeDirectory(f.tmp / "empty");
    StaticReportOptions options;
    options.limit = 5;
    int countdown = failing_write;
    util::fault::SetIoHook(FailNthWrite, &countdown);
    try {
      WriteStaticReport(*f.ds, f.tmp / "out", options);
      util::fault::SetIoHook(nullptr, nullptr);
      BOOST_FAIL("the report did not fail");
    } catch (const ResourceExhaustedError&) {
    }
    try {
      countdown = failing_write;
      WriteStaticReport(*f.ds, f.tmp / "empty", options);
      util::fault::SetIoHook(nullptr, nullptr);
      BOOST_FAIL("the report did not fail");
    } catch (const ResourceExhaustedError&) {
    }
    util::fault::SetIoHook(nullptr, nullptr);
    BOOST_TEST(util::ListDirectory(f.tmp.path()) == (std::vector<std::string>{"ds", "empty"}),
               "write " << failing_write);
    BOOST_TEST(util::ListDirectory(f.tmp / "empty").empty());
  }
}

BOOST_AUTO_TEST_CASE(a_page_brings_its_thumbnails_and_a_damaged_one_says_why) {
  TempDir tmp;
  {
    auto rw = Dataset::Create(tmp / "ds");
    auto w = rw->NewWriter();
    w->Append("good", {Jpeg(320, 240, 1), Jpeg(320, 240, 2), Jpeg(320, 240, 3)});
    w->Append("bad", {test::FakeJpeg(5000, 3)});  // markers, no image
    w->Append("also_good", {Jpeg(320, 240, 4)});
    w->Commit();
  }
  std::shared_ptr<const Dataset> ds = Dataset::Open(tmp / "ds");
  Api api(ds, ShowOptions{});
  const Reply page = api.Handle("/api/videos", ParamsOf({{"thumbs", "1"}}));
  BOOST_TEST(page.status == 200);
  ThumbnailOptions thumb;
  thumb.max_side = 160;
  // The middle frame of each, base64 as a data: URL takes it.
  const std::string good =
      Base64(std::string(ds->ReadThumbnails("good", Selection::Indices({1}), thumb)[0]));
  const std::string also =
      Base64(std::string(ds->ReadThumbnails("also_good", Selection::Indices({0}), thumb)[0]));
  BOOST_TEST(Contains(page.body, "\"thumb\": \"" + good + "\""));
  BOOST_TEST(Contains(page.body, "\"thumb\": \"" + also + "\""));
  BOOST_TEST(Contains(page.body, "\"thumb_error\": \"thumbnail id 'bad'"));
  // Without thumbs=1, none.
  BOOST_TEST(!Contains(api.Handle("/api/videos", NoParams()).body, "thumb"));
}

BOOST_AUTO_TEST_CASE(a_damaged_frame_is_shown_as_damaged_in_the_report) {
  TempDir tmp;
  {
    auto rw = Dataset::Create(tmp / "ds");
    auto w = rw->NewWriter();
    w->Append("good", {Jpeg(320, 240, 1)});
    w->Append("bad", {test::FakeJpeg(5000, 3)});  // markers, no image
    w->Commit();
  }
  auto ds = Dataset::Open(tmp / "ds");
  const StaticReport report = WriteStaticReport(*ds, tmp / "out", StaticReportOptions{});
  BOOST_TEST(report.shown == 2u);
  BOOST_TEST(report.damaged == 1u);
  const std::string html = test::ReadFile(tmp / "out/index.html");
  BOOST_TEST(Contains(html, "class=\"damaged\""));
  BOOST_TEST(Contains(html, "damaged: thumbnail id &#39;bad&#39;"));
  BOOST_TEST(util::ListDirectory(tmp / "out/thumbs").size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace gulpdb::view
