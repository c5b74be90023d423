// The charts of the page and the report: videos per label, and frames per
// video, drawn as SVG.
//
// Counting reads the whole dataset, so it never runs inside a page's first
// paint: the page asks for the charts after its first grid, and a
// ChartScan counts in a thread of its own while the page polls. Labels
// come from the label key's meta index when it has one
// (Dataset::CountMetaValues: the index's keys only); frames per video, and
// labels without an index, from the records: every record of a local
// dataset (Dataset::ForEach: batches of short reads), or, for a dataset in
// an object store, a sample spread over its order (at most kSampledVideos
// videos, whole blocks of the order, so that only their index partitions
// are fetched). Memory: one count per distinct label (at most kMaxLabels)
// and per distinct frame count (at most kMaxFrameCounts), never per video.
//
// Thread safety: ChartScan may be used from any number of threads at once;
// the other functions are pure or read the dataset as Dataset does.
#ifndef GULPDB_VIEW_CHARTS_H_
#define GULPDB_VIEW_CHARTS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/query.h"

namespace gulpdb::view {

inline constexpr uint64_t kSampledVideos = 20000;
inline constexpr size_t kMaxLabels = 10000;
inline constexpr size_t kMaxFrameCounts = 100000;

struct ChartData {
  uint64_t total = 0;    // videos in the dataset (or in the ids given)
  uint64_t scanned = 0;  // records read so far
  bool sampled = false;  // the records are a sample of the dataset's
  bool labels_from_index = false;
  std::vector<MetaValueCount> labels;   // most frequent first
  uint64_t labels_other = 0;            // videos whose label was past kMaxLabels
  uint64_t labels_missing = 0;          // videos without the label key (scanned ones)
  std::map<uint32_t, uint64_t> frames;  // frame count -> videos
  uint64_t frames_other = 0;            // videos past kMaxFrameCounts distinct counts
};

// Counts the charts of `dataset` (of the videos `ids` when not null,
// reading their records one by one), calling `progress` with the data so
// far every few thousand records; it returns false to stop (the data so
// far is returned). Throws what reading the dataset throws.
ChartData CountCharts(const Dataset& dataset, const std::string& label_key,
                      const std::vector<std::string>* ids,
                      const std::function<bool(const ChartData&)>& progress);

// A horizontal bar chart of the most frequent `max_bars` labels (a line says
// how many other values and videos there are). Each bar is a <g> with the
// label's JSON text in data-value, for the page's click-to-filter.
std::string LabelChartSvg(const ChartData& data, const std::string& label_key, size_t max_bars);
// A histogram of frames per video: one bar per frame count when there are
// few, else about 24 bins of equal width.
std::string FramesChartSvg(const ChartData& data);

// One background count for the page, done again after a commit.
class ChartScan {
 public:
  ChartScan(std::shared_ptr<const Dataset> dataset, std::string label_key);
  ~ChartScan();  // stops the count and waits for its thread
  ChartScan(const ChartScan&) = delete;
  ChartScan& operator=(const ChartScan&) = delete;

  struct Status {
    bool running = false;
    std::string error;  // the count failed: why
    ChartData data;
  };
  // Starts a count unless one ran or runs for the dataset's current
  // snapshot, and returns where it is.
  Status Poll();
  // Stops the count (Poll starts no other); returns once its thread ended.
  void Stop();

 private:
  void Run();

  std::shared_ptr<const Dataset> dataset_;
  std::string label_key_;
  std::mutex mutex_;
  Status status_;
  bool started_ = false;
  bool stopped_ = false;
  uint64_t snapshot_ = 0;  // of the count that ran or runs
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_CHARTS_H_
