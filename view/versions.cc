#include "view/versions.h"

#include <algorithm>
#include <utility>

#include "gulpdb/error.h"
#include "util/relative_name.h"

namespace gulpdb::view {
namespace {

bool IsHead(const std::string& name) { return name.empty() || name == kHead; }

// A name a client sent, for an error's text: its first 80 bytes, each that
// is not printable ASCII as \xNN (a NUL must not end the message).
std::string ShownName(const std::string& name) {
  constexpr size_t kMax = 80;
  return util::EscapeBytes(std::string_view(name).substr(0, kMax)) +
         (name.size() > kMax ? "\xe2\x80\xa6" : "");  // U+2026
}

// The tags' names for an error's text: "a, b" or "none".
std::string NamesOf(const std::vector<VersionInfo>& tags) {
  std::string names;
  for (const VersionInfo& tag : tags) {
    if (names.size() > 200) return names + ", …";
    names += (names.empty() ? "" : ", ") + tag.name;
  }
  return names.empty() ? "none" : names;
}

}  // namespace

ShownVersion::ShownVersion(std::string name_in, std::string root_in,
                           std::shared_ptr<const Dataset> dataset_in, const std::string& label_key)
    : name(std::move(name_in)),
      root(std::move(root_in)),
      dataset(std::move(dataset_in)),
      listing(dataset),
      charts(dataset, label_key) {}

ShownVersions::ShownVersions(std::shared_ptr<const Dataset> served, std::string served_name,
                             VersionOpener open, std::string label_key, size_t max_open)
    : served_dataset_(std::move(served)),
      served_name_(IsHead(served_name) ? kHead : std::move(served_name)),
      open_(std::move(open)),
      label_key_(std::move(label_key)),
      max_open_(max_open) {
  std::string root;
  if (served_name_ != kHead) {
    for (const VersionInfo& tag : Tags()) {
      if (tag.name == served_name_) root = tag.root;
    }
  }
  served_ = Make(served_name_, root, served_dataset_);
}

std::vector<VersionInfo> ShownVersions::Tags() const { return served_dataset_->Versions(); }

std::shared_ptr<ShownVersion> ShownVersions::Make(const std::string& name, const std::string& root,
                                                  std::shared_ptr<const Dataset> dataset) {
  auto shown = std::make_shared<ShownVersion>(name, root, std::move(dataset), label_key_);
  if (stopped_) shown->charts.Stop();
  return shown;
}

std::shared_ptr<ShownVersion> ShownVersions::Get(const std::optional<std::string>& requested) {
  const std::string name = !requested || requested->empty() ? served_name_
                           : IsHead(*requested)             ? kHead
                                                            : *requested;
  std::string root;
  if (name != kHead) {
    // Looked up by name in the list, on every request: a deleted tag is
    // refused from the next request on.
    const std::vector<VersionInfo> tags = Tags();
    const auto found = std::find_if(tags.begin(), tags.end(),
                                    [&](const VersionInfo& tag) { return tag.name == name; });
    if (found == tags.end()) {
      bool shown = name == served_name_;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& v : open_versions_) shown = shown || v->name == name;
      }
      throw NameNotFoundError(
          "version '" + ShownName(name) + "' of " + served_dataset_->dir() + ": " +
          (shown ? "the tag was deleted (choose another version)"
                 : "no tag has that name (tags: " + NamesOf(tags) + "; HEAD is the live dataset)"));
    }
    root = found->root;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (served_->name == name && served_->root == root) return served_;
  for (auto it = open_versions_.begin(); it != open_versions_.end(); ++it) {
    if ((*it)->name == name && (*it)->root == root) {
      open_versions_.splice(open_versions_.begin(), open_versions_, it);
      return open_versions_.front();
    }
  }
  // Opening a version reads its tag file and root (docs/versions.md):
  // small, and done once while it stays open.
  open_versions_.push_front(Make(name, root, open_(name)));
  std::shared_ptr<ShownVersion> shown = open_versions_.front();
  // A closed version's count stops when its last request is answered.
  while (open_versions_.size() > max_open_) open_versions_.pop_back();
  return shown;
}

void ShownVersions::Stop() {
  std::list<std::shared_ptr<ShownVersion>> shown;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    shown = open_versions_;
  }
  served_->charts.Stop();
  for (const auto& v : shown) v->charts.Stop();
}

}  // namespace gulpdb::view
