// Which version of the dataset an answer of the API reads (docs/view.md,
// "Versions"): the live dataset (HEAD) or one of its tags, each with the
// grid's pages and the charts' count of its own.
//
// The server is handed the dataset it serves (the live one, or the tag that
// `gulpdb view --version NAME` opened) and a way to open another version;
// a request names the version it wants, or none for the served one. A tag
// is looked up by name in the dataset's list of tags on every request, so a
// tag deleted while the page is open is an error saying so (NameNotFoundError)
// from the next request on, never stale pictures or a read of freed objects;
// a tag made again under the same name is opened again. A name is only ever
// compared with the names in that list: nothing a client sends becomes a
// path. Opened versions are kept (at most `max_open` besides the served
// one, least recently used closed first).
//
// Thread safety: any number of threads at once.
#ifndef GULPDB_VIEW_VERSIONS_H_
#define GULPDB_VIEW_VERSIONS_H_

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "gulpdb/dataset.h"
#include "view/charts.h"
#include "view/listing.h"

namespace gulpdb::view {

// The name of the live dataset wherever a version is asked for.
inline constexpr const char* kHead = "HEAD";

// Opens version `name` of the served dataset, read-only ("HEAD": the live
// dataset).
using VersionOpener = std::function<std::shared_ptr<const Dataset>(const std::string& name)>;

// One version as the page shows it.
struct ShownVersion {
  ShownVersion(std::string name, std::string root, std::shared_ptr<const Dataset> dataset,
               const std::string& label_key);
  const std::string name;  // kHead or a tag's name
  const std::string root;  // the tag's root (VersionInfo::root); empty for HEAD
  const std::shared_ptr<const Dataset> dataset;
  Listing listing;
  ChartScan charts;
};

class ShownVersions {
 public:
  // `served` is version `served_name` (empty or kHead: the live dataset).
  ShownVersions(std::shared_ptr<const Dataset> served, std::string served_name, VersionOpener open,
                std::string label_key, size_t max_open = 4);

  // Version `name` (nullopt or empty: the served one). NameNotFoundError for
  // a name no tag has now (saying so when it was deleted while shown).
  std::shared_ptr<ShownVersion> Get(const std::optional<std::string>& name);
  // The served version's name (kHead for the live dataset).
  const std::string& served_name() const { return served_name_; }
  // The tags, oldest first (Dataset::Versions on the served dataset).
  std::vector<VersionInfo> Tags() const;

  // Stops every chart count (the server's shutdown); versions opened later
  // count nothing.
  void Stop();

 private:
  std::shared_ptr<ShownVersion> Make(const std::string& name, const std::string& root,
                                     std::shared_ptr<const Dataset> dataset);

  const std::shared_ptr<const Dataset> served_dataset_;
  const std::string served_name_;
  const VersionOpener open_;
  const std::string label_key_;
  const size_t max_open_;
  std::mutex mutex_;
  bool stopped_ = false;
  std::shared_ptr<ShownVersion> served_;                    // opened with the server, never closed
  std::list<std::shared_ptr<ShownVersion>> open_versions_;  // most recently used first
};

}  // namespace gulpdb::view

#endif  // GULPDB_VIEW_VERSIONS_H_
