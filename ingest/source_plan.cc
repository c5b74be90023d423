// Which listed sources an ingest keeps (include/gulpdb/ingest.h PlanSources,
// DropIdsPresent): the rules Ingest applies before it writes anything, and
// that a distributed ingest's plan (bindings/python/gulpdb/distributed)
// calls instead of writing them again.
#include <string>
#include <unordered_set>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"

namespace gulpdb::ingest {

SourcePlan PlanSources(const std::string& dir, OnDuplicate on_duplicate, bool strict,
                       const std::vector<std::string_view>& ids,
                       const std::vector<std::optional<SourceProblem>>& problems) {
  if (!problems.empty() && problems.size() != ids.size()) {
    throw InvalidArgumentError("plan the sources of " + dir + ": " +
                               std::to_string(problems.size()) + " problems for " +
                               std::to_string(ids.size()) + " sources");
  }
  SourcePlan plan;
  plan.keep.assign(ids.size(), true);
  // Ids listed twice: an error; kSkip keeps the first, kReplace the last.
  std::unordered_set<std::string_view> seen;
  const bool last_wins = on_duplicate == OnDuplicate::kReplace;
  for (size_t n = 0; n < ids.size(); ++n) {
    const size_t i = last_wins ? ids.size() - 1 - n : n;
    if (seen.insert(ids[i]).second) continue;
    if (on_duplicate == OnDuplicate::kError) {
      throw InvalidArgumentError("ingest " + dir + ": id '" + std::string(ids[i]) +
                                 "' is listed twice (see --on-duplicate)");
    }
    plan.keep[i] = false;
    ++plan.duplicates;
  }
  // Sources no dataset can hold: bad sources, found before anything is written.
  for (size_t i = 0; i < problems.size(); ++i) {
    if (!plan.keep[i] || !problems[i]) continue;
    if (strict)
      throw InvalidArgumentError("ingest '" + problems[i]->id + "': " + problems[i]->message);
    plan.keep[i] = false;
    plan.bad.push_back(i);
  }
  return plan;
}

uint64_t DropIdsPresent(const Dataset& dataset, const std::string& dir, OnDuplicate on_duplicate,
                        const std::vector<std::string_view>& ids, std::vector<bool>* keep) {
  if (keep->size() != ids.size()) {
    throw InvalidArgumentError("drop the ids already in " + dir + ": " +
                               std::to_string(keep->size()) + " flags for " +
                               std::to_string(ids.size()) + " ids");
  }
  if (on_duplicate == OnDuplicate::kReplace) return 0;
  uint64_t present = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!(*keep)[i] || !dataset.Contains(ids[i])) continue;
    if (on_duplicate == OnDuplicate::kError) {
      throw InvalidArgumentError("ingest " + dir + ": id '" + std::string(ids[i]) +
                                 "' is already in the dataset (see --on-duplicate)");
    }
    (*keep)[i] = false;
    ++present;
  }
  return present;
}

}  // namespace gulpdb::ingest
