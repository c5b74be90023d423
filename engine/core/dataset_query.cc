// The Dataset calls about meta and splits (gulpdb/dataset.h): each takes
// one snapshot of the index (lmdb_snapshot.h) and hands it to the query
// room (engine/query/select.h), which answers on it whatever the index is.
// The query room never calls back into the core.
#include <string>
#include <vector>

#include "engine/core/dataset_impl.h"
#include "engine/core/lmdb_snapshot.h"
#include "engine/query/expr.h"
#include "engine/query/query_txn.h"
#include "engine/query/select.h"
#include "gulpdb/dataset.h"
#include "gulpdb/query.h"

namespace gulpdb {
namespace {

using engine::ReadSnapshot;
constexpr ReadSnapshot::Query kQuery = ReadSnapshot::Query::kYes;

}  // namespace

std::vector<std::string> Dataset::Select(const Query& query) const {
  if (query.MatchesEverything()) return Ids();
  return engine::SelectIds(*ReadSnapshot(*impl_, kQuery), impl_->dir, query.rep().expr);
}

std::vector<std::string> Dataset::Select(std::string_view expression) const {
  return Select(Query::Parse(expression));
}

std::vector<std::string> Dataset::Select(const std::vector<MetaCondition>& conditions) const {
  const engine::QueryExpr expr = engine::ConditionsExpr(conditions, "select in " + impl_->dir);
  if (expr.kind == engine::QueryExpr::Kind::kAll) return Ids();
  return engine::SelectIds(*ReadSnapshot(*impl_, kQuery), impl_->dir, expr);
}

std::vector<std::string> Dataset::Select(std::string_view key, std::string_view json_value) const {
  return Select({MetaCondition::Equals(std::string(key), std::string(json_value))});
}

bool Dataset::CreateMetaIndex(std::string_view key, std::chrono::milliseconds lock_timeout) {
  CheckMetaIndexKey(key, "create meta index in " + impl_->dir);
  WriterOptions options;
  options.lock_timeout = lock_timeout;
  std::unique_ptr<Writer> writer = NewWriter(options);  // the lock, and crash recovery
  return engine::BuildMetaIndex(*impl_, key) != engine::MetaIndexBuild::kExisted;
}

bool Dataset::DropMetaIndex(std::string_view key, std::chrono::milliseconds lock_timeout) {
  WriterOptions options;
  options.lock_timeout = lock_timeout;
  std::unique_ptr<Writer> writer = NewWriter(options);  // refreshes the query databases
  return engine::DropMetaIndexOf(*impl_, key);
}

std::vector<std::string> Dataset::MetaIndexes() const {
  std::vector<std::string> names;
  for (engine::MetaField& field :
       engine::SnapshotFields(*ReadSnapshot(*impl_, kQuery), impl_->dir)) {
    names.push_back(std::move(field.name));
  }
  return names;
}

std::vector<MetaIndexInfo> Dataset::MetaIndexDetails() const {
  std::vector<MetaIndexInfo> out;
  for (engine::MetaField& field :
       engine::SnapshotFields(*ReadSnapshot(*impl_, kQuery), impl_->dir)) {
    out.push_back(MetaIndexInfo{std::move(field.name), field.form == index::MetaKeyForm::kOrdered});
  }
  return out;
}

std::optional<std::vector<MetaValueCount>> Dataset::CountMetaValues(std::string_view key) const {
  return engine::CountMetaValues(*ReadSnapshot(*impl_, kQuery), impl_->dir, key);
}

std::vector<std::string> Dataset::AbsentMetaKeys(const std::vector<std::string>& keys) const {
  return engine::AbsentMetaKeys(*ReadSnapshot(*impl_, kQuery), impl_->dir, keys);
}

std::vector<SplitInfo> Dataset::Splits() const {
  std::vector<SplitInfo> out;
  for (const auto& [name, header] :
       engine::SnapshotSplitHeaders(*ReadSnapshot(*impl_, kQuery), impl_->dir, "list splits")) {
    out.push_back(SplitInfo{name, header.count});
  }
  return out;
}

std::vector<std::string> Dataset::Split(std::string_view name) const {
  return engine::SplitIdsNamed(*ReadSnapshot(*impl_, kQuery), impl_->dir, name);
}

}  // namespace gulpdb
