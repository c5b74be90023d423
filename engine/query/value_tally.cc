// Counts of meta values from the records (gulpdb::MetaValueTally, query.h),
// with the equality of meta_value.h, for a key without a meta index; and the
// text a value is shown with.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"
#include "gulpdb/query.h"

namespace gulpdb {

std::string engine::MetaValueText(std::string_view json) {
  if (json.empty() || json.front() != '"') return std::string(json);
  try {
    return engine::DecodeJsonString(json);
  } catch (const InvalidArgumentError&) {
    return std::string(json);  // a lone surrogate has no UTF-8 form: shown escaped
  }
}

MetaValueTally::MetaValueTally(std::string_view key, size_t max_values) : max_values_(max_values) {
  try {
    quoted_key_.push_back(engine::PythonJsonString(key));
  } catch (const InvalidArgumentError&) {
    throw InvalidArgumentError("count values of meta key '" + engine::PrintableBytes(key, 40) +
                               "': it is not valid UTF-8");
  }
}

void MetaValueTally::Add(std::string_view id, std::string_view meta_data) {
  std::vector<std::string_view> values;
  std::string error;
  if (!engine::FindFirstEntryValues(meta_data, quoted_key_, &values, &error)) {
    throw CorruptionError("count meta values: meta of id '" + engine::PrintableBytes(id, 100) +
                          "': " + error);
  }
  ++videos_;
  if (values[0].empty()) {
    ++missing_;
    return;
  }
  std::string canonical = engine::CanonicalMetaValue(values[0]);
  const auto it = canonical_.find(canonical);
  if (it != canonical_.end()) {
    ++values_[it->second].count;
    return;
  }
  if (values_.size() >= max_values_) {
    ++others_;
    return;
  }
  canonical_.emplace(std::move(canonical), values_.size());
  values_.push_back(MetaValueCount{std::string(values[0]), engine::MetaValueText(values[0]), 1});
}

std::vector<MetaValueCount> MetaValueTally::Values() const {
  std::vector<MetaValueCount> out = values_;
  std::stable_sort(out.begin(), out.end(), [](const MetaValueCount& a, const MetaValueCount& b) {
    return a.count > b.count;
  });
  return out;
}

}  // namespace gulpdb
