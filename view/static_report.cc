// The static report (view.h, WriteStaticReport): a contact sheet written as
// files, built in a new directory beside its destination and renamed into
// place last.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gulpdb/error.h"
#include "gulpdb/query.h"
#include "util/file_io.h"
#include "util/sys_error.h"
#include "view/charts.h"
#include "view/filter.h"
#include "view/text.h"
#include "view/view.h"

namespace gulpdb::view {
namespace {

// The style of the sheet, inline: the file opens on its own.
constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 16px; color: #222; background: #fafafa; }
h1 { font-size: 18px; margin: 0 0 4px 0; word-break: break-all; }
p.summary { margin: 0 0 12px 0; color: #555; }
section.charts { display: flex; flex-wrap: wrap; gap: 16px; margin-bottom: 16px; }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(176px, 1fr)); gap: 8px; }
figure { margin: 0; padding: 6px; background: #fff; border: 1px solid #ddd; border-radius: 4px; }
figure img { display: block; margin: 0 auto; max-width: 100%; }
figure.damaged { border-color: #c33; }
figcaption { font-size: 12px; margin-top: 4px; overflow-wrap: anywhere; }
figcaption .label { color: #2a5d9f; display: block; }
figcaption .frames, figcaption .error { color: #777; display: block; }
figcaption .error { color: #c33; }
)";

// Removes a directory tree unless Keep() was called: what a failed report
// leaves is nothing.
class TreeGuard {
 public:
  explicit TreeGuard(std::string path) : path_(std::move(path)) {}
  ~TreeGuard() {
    if (path_.empty()) return;
    try {
      util::RemoveTree(path_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gulpdb view: could not remove %s: %s\n", path_.c_str(), e.what());
    }
  }
  TreeGuard(const TreeGuard&) = delete;
  TreeGuard& operator=(const TreeGuard&) = delete;
  void Keep() { path_.clear(); }

 private:
  std::string path_;
};

// Checks `out` and returns its parent directory.
std::string CheckDestination(const std::string& out) {
  if (out.empty()) throw InvalidArgumentError("write report: the output directory is empty");
  struct stat st;
  if (::lstat(out.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      throw InvalidArgumentError("write report " + out + ": exists and is not a directory");
    }
    if (!util::ListDirectory(out).empty()) {
      throw InvalidArgumentError("write report " + out +
                                 ": the directory is not empty (the report goes into a new or "
                                 "empty directory, so that it never mixes with other files)");
    }
  } else if (errno != ENOENT) {
    util::ThrowErrno("write report", out, errno);
  }
  std::string trimmed = out;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  const std::string parent =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : trimmed.substr(0, slash));
  if (!util::IsDirectory(parent)) {
    throw NotFoundError("write report " + out + ": the parent directory " + parent +
                        " does not exist");
  }
  return parent;
}

// A new, empty directory beside `out`, on the same file system.
std::string MakeWorkDirectory(const std::string& parent, const std::string& out) {
  std::string name = out;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  const size_t slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  std::string pattern = parent + "/." + name + ".partial-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) util::ThrowErrno("write report", pattern, errno);
  return pattern;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  const util::UniqueFd fd = util::OpenFile(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  util::WriteFull(fd.get(), bytes, path);
}

// The label a card shows: the first meta entry's value of `key`.
std::string LabelOf(const VideoInfo& video, const std::string& key) {
  MetaValueTally tally(key, 1);
  try {
    tally.Add(video.id, video.meta_data);
  } catch (const CorruptionError&) {
    return "(meta is not JSON)";
  }
  const std::vector<MetaValueCount> values = tally.Values();
  return values.empty() ? "" : values.front().text;
}

}  // namespace

StaticReport WriteStaticReport(const Dataset& dataset, const std::string& out,
                               const StaticReportOptions& options) {
  if (options.limit == 0) throw InvalidArgumentError("write report " + out + ": a limit of 0");
  const std::string parent = CheckDestination(out);
  StaticReport report;
  std::vector<std::string> matching;  // with a filter: every match
  std::vector<std::string> ids;
  if (options.where.empty()) {
    report.matched = dataset.Count();
    ids = dataset.IdsAt(0, options.limit);
  } else {
    matching = FilterIds(dataset, options.where);
    report.matched = matching.size();
    ids.assign(matching.begin(), matching.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(
                                                        matching.size(), options.limit)));
  }
  const ChartData charts =
      CountCharts(dataset, options.show.label_key, options.where.empty() ? nullptr : &matching,
                  [](const ChartData&) { return true; });

  const std::string work = MakeWorkDirectory(parent, out);
  TreeGuard guard(work);
  util::MakeDirectory(work + "/thumbs", 0755, "write report");
  std::string cards;
  for (const std::string& id : ids) {
    const std::optional<VideoInfo> video = dataset.Find(id);
    if (!video) continue;  // removed meanwhile
    char name[32];
    std::snprintf(name, sizeof name, "thumbs/%06llu.jpg",
                  static_cast<unsigned long long>(report.shown));
    const uint32_t frames = static_cast<uint32_t>(video->frames.size());
    std::string error;
    if (frames == 0) {
      error = "no frames";
    } else {
      try {
        ThumbnailOptions thumb;
        thumb.max_side = options.show.thumb_side;
        const StoredFrames jpeg = dataset.ReadThumbnails(
            id, Selection::Indices({static_cast<int64_t>(frames / 2)}), thumb);
        WriteFile(work + "/" + name, jpeg[0]);
      } catch (const CorruptionError& e) {
        error = e.what();
      } catch (const NotFoundError& e) {
        error = e.what();
      }
    }
    std::string caption = "<span class=\"id\">" + HtmlEscape(id) + "</span><span class=\"label\">" +
                          HtmlEscape(LabelOf(*video, options.show.label_key)) +
                          "</span><span class=\"frames\">" + std::to_string(frames) +
                          (frames == 1 ? " frame" : " frames") + "</span>";
    if (error.empty()) {
      cards += "<figure><img src=\"" + std::string(name) + "\" alt=\"" + HtmlEscape(id) +
               "\" loading=\"lazy\"><figcaption>" + caption + "</figcaption></figure>\n";
    } else {
      ++report.damaged;
      cards += "<figure class=\"damaged\"><figcaption>" + caption +
               "<span class=\"error\">damaged: " + HtmlEscape(error) +
               "</span></figcaption></figure>\n";
    }
    ++report.shown;
  }
  // The version the sheet was made from, always said: a sheet attached to
  // an issue outlives the state of the dataset it shows.
  const std::string version =
      options.version.empty() || options.version == "HEAD" ? "HEAD" : options.version;
  std::string summary = "Version <span class=\"version\">" + HtmlEscape(version) + "</span>" +
                        (version == "HEAD" ? " (the live dataset)" : " (a tag)") + ": " +
                        std::to_string(report.matched) + " of " + std::to_string(dataset.Count()) +
                        " videos";
  if (!options.where.empty()) summary += " match " + HtmlEscape(options.where);
  summary += "; the first " + std::to_string(report.shown) + " shown (middle frames). Codec " +
             std::string(CodecName(dataset.codec())) + ". Written by gulpdb view --static.";
  const std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gulpdb: " +
      HtmlEscape(dataset.dir()) + (version == "HEAD" ? "" : " @ " + HtmlEscape(version)) +
      "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + HtmlEscape(dataset.dir()) +
      "</h1>\n<p class=\"summary\">" + summary + "</p>\n<section class=\"charts\">\n" +
      LabelChartSvg(charts, options.show.label_key, 40) + "\n" + FramesChartSvg(charts) +
      "\n</section>\n<main>\n" + cards + "</main>\n</body>\n</html>\n";
  WriteFile(work + "/index.html", html);
  // Into place: over an empty directory, or where none was (rename(2)).
  util::Rename(work, out);
  guard.Keep();
  return report;
}

}  // namespace gulpdb::view
