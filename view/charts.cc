#include "view/charts.h"

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "view/text.h"

namespace gulpdb::view {
namespace {

constexpr uint64_t kProgressEvery = 4096;  // records between progress calls

class Counter {
 public:
  Counter(const std::string& label_key, const std::function<bool(const ChartData&)>& progress)
      : tally_(label_key, kMaxLabels), progress_(progress) {}

  ChartData& data() { return data_; }

  void UseIndex(std::vector<MetaValueCount> labels) {
    data_.labels_from_index = true;
    uint64_t counted = 0;
    for (const MetaValueCount& v : labels) counted += v.count;
    if (labels.size() > kMaxLabels) {
      for (size_t i = kMaxLabels; i < labels.size(); ++i) data_.labels_other += labels[i].count;
      labels.resize(kMaxLabels);
    }
    data_.labels = std::move(labels);
    data_.labels_missing = data_.total > counted ? data_.total - counted : 0;
  }

  // Counts one video; false when the caller asked to stop.
  bool Add(const VideoInfo& video) {
    ++data_.scanned;
    const auto frames = static_cast<uint32_t>(video.frames.size());
    auto it = data_.frames.find(frames);
    if (it != data_.frames.end()) {
      ++it->second;
    } else if (data_.frames.size() < kMaxFrameCounts) {
      data_.frames.emplace(frames, 1);
    } else {
      ++data_.frames_other;
    }
    if (!data_.labels_from_index) tally_.Add(video.id, video.meta_data);
    if (data_.scanned % kProgressEvery != 0) return true;
    Settle();
    return progress_(data_);
  }

  // The labels counted from the records so far, into data().
  void Settle() {
    if (data_.labels_from_index) return;
    data_.labels = tally_.Values();
    data_.labels_other = tally_.others();
    data_.labels_missing = tally_.missing();
  }

 private:
  MetaValueTally tally_;
  const std::function<bool(const ChartData&)>& progress_;
  ChartData data_;
};

// The records of a sample of a dataset in an object store: whole blocks of
// its order (each block's ids and records are stored together), spread
// evenly over it, until kSampledVideos.
void CountSample(const Dataset& dataset, Counter* counter) {
  const uint64_t total = counter->data().total;
  const std::vector<uint64_t> starts = dataset.OrderBlocks();
  const uint64_t blocks = starts.size();
  const uint64_t wanted =
      total <= kSampledVideos
          ? blocks
          : std::max<uint64_t>(1, (blocks * kSampledVideos + total - 1) / total);
  uint64_t left = kSampledVideos;
  for (uint64_t i = 0; i < wanted && left > 0; ++i) {
    const uint64_t block = wanted == blocks ? i : i * blocks / wanted;
    const uint64_t start = starts[block];
    const uint64_t end = block + 1 < blocks ? starts[block + 1] : total;
    for (uint64_t at = start; at < end && left > 0;) {
      const uint64_t count = std::min<uint64_t>({end - at, left, 1024});
      const std::vector<std::string> ids = dataset.IdsAt(at, count);
      if (ids.empty()) return;
      for (const std::string& id : ids) {
        const std::optional<VideoInfo> video = dataset.Find(id);
        if (video && !counter->Add(*video)) return;
      }
      at += ids.size();
      left -= std::min<uint64_t>(left, ids.size());
    }
  }
}

std::string Num(uint64_t n) { return std::to_string(n); }
std::string Num(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", x);
  return text;
}

std::string SvgOpen(int width, int height, const std::string& label) {
  // No xmlns: the SVG is inline in HTML (the page, the report), whose parser
  // gives it its namespace; the report names no network address at all.
  return "<svg class=\"chart\" width=\"" + Num(uint64_t(width)) + "\" height=\"" +
         Num(uint64_t(height)) + "\" viewBox=\"0 0 " + Num(uint64_t(width)) + " " +
         Num(uint64_t(height)) + "\" role=\"img\" aria-label=\"" + HtmlEscape(label) +
         "\" font-family=\"sans-serif\" font-size=\"12\">";
}

std::string Text(double x, double y, const std::string& text, const char* anchor = "start",
                 const char* extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + anchor + "\"" + extra +
         ">" + HtmlEscape(text) + "</text>";
}

std::string Source(const ChartData& data) {
  if (data.sampled) {
    return " (a sample of " + Num(data.scanned) + " of " + Num(data.total) + " videos)";
  }
  if (data.scanned < data.total) {
    return " (counting: " + Num(data.scanned) + " of " + Num(data.total) + " videos)";
  }
  return "";
}

}  // namespace

ChartData CountCharts(const Dataset& dataset, const std::string& label_key,
                      const std::vector<std::string>* ids,
                      const std::function<bool(const ChartData&)>& progress) {
  Counter counter(label_key, progress);
  ChartData& data = counter.data();
  if (ids != nullptr) {
    data.total = ids->size();
    for (const std::string& id : *ids) {
      const std::optional<VideoInfo> video = dataset.Find(id);
      if (video && !counter.Add(*video)) break;
    }
  } else {
    data.total = dataset.Count();
    if (std::optional<std::vector<MetaValueCount>> indexed = dataset.CountMetaValues(label_key)) {
      counter.UseIndex(std::move(*indexed));
      if (!progress(data)) return data;  // the labels show while the frames are counted
    }
    if (IsRemoteUrl(dataset.dir())) {
      CountSample(dataset, &counter);
      data.sampled = data.scanned < data.total;
    } else {
      dataset.ForEach([&](const VideoInfo& video) { return counter.Add(video); });
    }
  }
  counter.Settle();
  return data;
}

std::string LabelChartSvg(const ChartData& data, const std::string& label_key, size_t max_bars) {
  const size_t bars = std::min(max_bars, data.labels.size());
  constexpr int kWidth = 640, kRow = 18, kTop = 24, kLabelRight = 216, kBarLeft = 222;
  constexpr int kBarMax = 340;
  uint64_t shown = 0, most = 1;
  for (size_t i = 0; i < bars; ++i) {
    shown += data.labels[i].count;
    most = std::max(most, data.labels[i].count);
  }
  uint64_t rest_videos = data.labels_other, rest_values = data.labels.size() - bars;
  for (size_t i = bars; i < data.labels.size(); ++i) rest_videos += data.labels[i].count;
  std::vector<std::string> notes;
  if (rest_values != 0 || data.labels_other != 0) {
    notes.push_back((rest_values != 0 ? Num(rest_values) + " more values" : "more values") + ": " +
                    Num(rest_videos) + " videos");
  }
  if (data.labels_missing != 0) {
    notes.push_back(Num(data.labels_missing) + " videos without '" + label_key + "'");
  }
  if (bars == 0 && notes.empty()) notes.push_back("no labels");
  const int height =
      kTop + static_cast<int>(bars) * kRow + static_cast<int>(notes.size()) * kRow + 8;
  std::string svg = SvgOpen(kWidth, height, "videos per " + label_key);
  svg += Text(0, 14,
              "videos per " + label_key +
                  (data.labels_from_index ? " (from the meta index)" : Source(data)),
              "start", " font-weight=\"bold\"");
  for (size_t i = 0; i < bars; ++i) {
    const MetaValueCount& v = data.labels[i];
    const double y = kTop + static_cast<double>(i) * kRow;
    const double width =
        std::max(1.0, static_cast<double>(v.count) / static_cast<double>(most) * kBarMax);
    svg += "<g class=\"bar\" data-value=\"" + HtmlEscape(v.value) + "\"><title>" +
           HtmlEscape(v.text) + ": " + Num(v.count) + " videos</title>";
    svg += Text(kLabelRight, y + 12, Shorten(v.text, 32), "end");
    svg += "<rect x=\"" + Num(uint64_t(kBarLeft)) + "\" y=\"" + Num(y + 2) + "\" width=\"" +
           Num(width) + "\" height=\"14\" fill=\"#4a7fc1\"/>";
    svg += Text(kBarLeft + width + 4, y + 12, Num(v.count));
    svg += "</g>";
  }
  double y = kTop + static_cast<double>(bars) * kRow;
  for (const std::string& note : notes) {
    svg += Text(0, y + 12, note, "start", " fill=\"#555\"");
    y += kRow;
  }
  return svg + "</svg>";
}

std::string FramesChartSvg(const ChartData& data) {
  constexpr int kWidth = 640, kHeight = 200, kTop = 24, kBottom = 36, kLeft = 8;
  constexpr int kPlot = kHeight - kTop - kBottom;
  struct Bin {
    uint32_t lo = 0, hi = 0;
    uint64_t count = 0;
  };
  std::vector<Bin> bins;
  if (!data.frames.empty()) {
    const uint32_t lo = data.frames.begin()->first, hi = data.frames.rbegin()->first;
    if (data.frames.size() <= 32) {
      for (const auto& [frames, count] : data.frames) bins.push_back(Bin{frames, frames, count});
    } else {
      const uint64_t span = uint64_t{hi} - lo + 1;
      const uint64_t step = (span + 23) / 24;
      for (uint64_t b = lo; b <= hi; b += step) {
        bins.push_back(Bin{static_cast<uint32_t>(b),
                           static_cast<uint32_t>(std::min<uint64_t>(hi, b + step - 1)), 0});
      }
      for (const auto& [frames, count] : data.frames) bins[(frames - lo) / step].count += count;
    }
  }
  std::string svg = SvgOpen(kWidth, kHeight, "frames per video");
  svg += Text(0, 14, "frames per video" + Source(data), "start", " font-weight=\"bold\"");
  if (bins.empty())
    return svg + Text(0, kTop + 14, "no videos", "start", " fill=\"#555\"") + "</svg>";
  uint64_t most = 1;
  for (const Bin& b : bins) most = std::max(most, b.count);
  const double slot = static_cast<double>(kWidth - 2 * kLeft) / static_cast<double>(bins.size());
  const size_t label_every = (bins.size() + 7) / 8;
  for (size_t i = 0; i < bins.size(); ++i) {
    const Bin& b = bins[i];
    const double h =
        b.count == 0
            ? 0.0
            : std::max(1.0, static_cast<double>(b.count) / static_cast<double>(most) * kPlot);
    const double x = kLeft + static_cast<double>(i) * slot;
    const std::string range =
        b.lo == b.hi ? Num(uint64_t{b.lo}) : Num(uint64_t{b.lo}) + "-" + Num(uint64_t{b.hi});
    svg += "<g class=\"bin\"><title>" + range + " frames: " + Num(b.count) + " videos</title>";
    svg += "<rect x=\"" + Num(x + 1) + "\" y=\"" + Num(kTop + kPlot - h) + "\" width=\"" +
           Num(std::max(1.0, slot - 2)) + "\" height=\"" + Num(h) + "\" fill=\"#4a7fc1\"/>";
    if (i % label_every == 0 || i + 1 == bins.size()) {
      svg += Text(x + slot / 2, kTop + kPlot + 14, range, "middle");
    }
    svg += "</g>";
  }
  std::string note = "the tallest bar: " + Num(most) + " videos";
  if (data.frames_other != 0) note += "; " + Num(data.frames_other) + " not drawn";
  svg += Text(0, kHeight - 4, note, "start", " fill=\"#555\"");
  return svg + "</svg>";
}

ChartScan::ChartScan(std::shared_ptr<const Dataset> dataset, std::string label_key)
    : dataset_(std::move(dataset)), label_key_(std::move(label_key)) {}

ChartScan::~ChartScan() { Stop(); }

void ChartScan::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

ChartScan::Status ChartScan::Poll() {
  const uint64_t snapshot = dataset_->SnapshotId();
  std::unique_lock<std::mutex> lock(mutex_);
  const bool stale = started_ && !status_.running && snapshot != snapshot_;
  if (!stopped_ && (!started_ || stale)) {
    if (thread_.joinable()) thread_.join();  // it ended: status_ says so
    started_ = true;
    snapshot_ = snapshot;
    status_ = Status{};
    status_.running = true;
    thread_ = std::thread([this] { Run(); });
  }
  return status_;
}

void ChartScan::Run() {
  Status done;
  try {
    done.data = CountCharts(*dataset_, label_key_, nullptr, [&](const ChartData& data) {
      std::lock_guard<std::mutex> lock(mutex_);
      status_.data = data;
      return !stop_.load();
    });
  } catch (const std::exception& e) {
    done.error = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done.running = false;
    status_ = std::move(done);
  }
  // The count read every record through short-lived buffers; give their
  // pages back, so that a long-running server keeps only what it holds.
  ::malloc_trim(0);
}

}  // namespace gulpdb::view
