#include "engine/query/query_exec.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "engine/query/query_eval.h"
#include "engine/query/query_plan.h"
#include "gulpdb/error.h"
#include "index/query_keys.h"

namespace gulpdb::engine {
namespace {

// A candidate: where the video is (its order), its id, and whether the
// index vouches for it (false) or it must be checked (true).
struct Match {
  uint32_t chunk = 0;
  uint64_t seq = 0;
  std::string id;
  bool verify = false;
};
using Matches = std::vector<Match>;

bool Before(const Match& a, const Match& b) {
  return a.chunk != b.chunk ? a.chunk < b.chunk : a.seq < b.seq;
}
bool Same(const Match& a, const Match& b) { return a.chunk == b.chunk && a.seq == b.seq; }

// Sorts and drops repeats; a video one source vouches for is vouched for.
// Entries of one value come in order already (is_sorted costs a pass, a
// sort of 10^5 entries far more).
void SortUnique(Matches* m) {
  if (!std::is_sorted(m->begin(), m->end(), Before)) std::sort(m->begin(), m->end(), Before);
  size_t kept = 0;
  for (size_t i = 0; i < m->size(); ++i) {
    if (kept != 0 && Same((*m)[kept - 1], (*m)[i])) {
      (*m)[kept - 1].verify = (*m)[kept - 1].verify && (*m)[i].verify;
      continue;
    }
    if (kept != i) (*m)[kept] = std::move((*m)[i]);
    ++kept;
  }
  m->resize(kept);
}

// The candidates of both sorted lists; vouched for only when both vouch.
Matches Intersect(Matches a, const Matches& b) {
  Matches out;
  size_t j = 0;
  for (Match& m : a) {
    while (j < b.size() && Before(b[j], m)) ++j;
    if (j < b.size() && Same(b[j], m)) {
      m.verify = m.verify || b[j].verify;
      out.push_back(std::move(m));
    }
  }
  return out;
}

// An `and` narrows by the smallest child it can read; another child is
// intersected with it when not more than this many times larger (reading
// it costs less than checking the candidates' records).
constexpr size_t kIntersectRatio = 16;
// The bounds an `and` tries its children with, smallest first.
constexpr size_t kProbeCaps[] = {4096, 65536};

class Executor {
 public:
  Executor(IndexReader& reader, QueryRun* run) : reader_(reader), run_(run) {}

  // The candidates of `p`, sorted; nullopt when there are more than `cap`.
  std::optional<Matches> Collect(const QueryPlan& p, size_t cap) {
    switch (p.kind) {
      case QueryPlan::Kind::kMeta:
        return Meta(p, cap);
      case QueryPlan::Kind::kIds:
        return Ids(p, cap);
      case QueryPlan::Kind::kIdRange:
        return IdRange(p, cap);
      case QueryPlan::Kind::kOr:
        return Or(p, cap);
      case QueryPlan::Kind::kAnd:
        return And(p, cap);
      case QueryPlan::Kind::kScan:
        break;
    }
    throw InvalidArgumentError("select: a scan has no candidates");  // not reached
  }

 private:
  std::optional<Matches> Meta(const QueryPlan& p, size_t cap) {
    Matches out;
    bool over = false;
    for (const IndexRange& r : p.ranges) {
      const size_t before = out.size();
      reader_.Entries(r.from, r.to, [&](std::string_view key, std::string_view id) {
        if (out.size() >= cap) {
          over = true;
          return false;
        }
        Match m;
        index::DecodeMetaEntryKey(key, &m.chunk, &m.seq);
        m.id = std::string(id);
        m.verify = r.verify;
        out.push_back(std::move(m));
        ++run_->entries;
        return true;
      });
      if (over) return std::nullopt;
      // Each value's entries are in order; several values interleave (a
      // range of values: sorted once, below).
      const auto middle = out.begin() + static_cast<std::ptrdiff_t>(before);
      if (before != 0 && std::is_sorted(middle, out.end(), Before)) {
        std::inplace_merge(out.begin(), middle, out.end(), Before);
      }
    }
    SortUnique(&out);
    return out;
  }

  std::optional<Matches> Ids(const QueryPlan& p, size_t cap) {
    Matches out;
    for (const std::string& id : p.ids) {
      ++run_->entries;
      const std::optional<index::VideoMetaView> v = reader_.Video(id);
      if (!v) continue;
      if (out.size() >= cap) return std::nullopt;
      out.push_back(Match{v->chunk, v->seq, id, false});
    }
    SortUnique(&out);
    return out;
  }

  std::optional<Matches> IdRange(const QueryPlan& p, size_t cap) {
    Matches out;
    bool over = false;
    reader_.Videos(p.id_from, p.id_to, [&](std::string_view id, const index::VideoMetaView& v) {
      if (out.size() >= cap) {
        over = true;
        return false;
      }
      ++run_->entries;
      out.push_back(Match{v.chunk, v.seq, std::string(id), false});
      return true;
    });
    if (over) return std::nullopt;
    SortUnique(&out);
    return out;
  }

  std::optional<Matches> Or(const QueryPlan& p, size_t cap) {
    Matches out;
    for (const QueryPlan& c : p.children) {
      std::optional<Matches> part = Collect(c, cap);
      if (!part) return std::nullopt;
      for (Match& m : *part) out.push_back(std::move(m));
      SortUnique(&out);
      if (out.size() > cap) return std::nullopt;
    }
    return out;
  }

  std::optional<Matches> And(const QueryPlan& p, size_t cap) {
    std::vector<std::optional<Matches>> known(p.children.size());
    bool any = false;
    for (size_t round = 0; round <= std::size(kProbeCaps) && !any; ++round) {
      const size_t bound = round < std::size(kProbeCaps) ? std::min(cap, kProbeCaps[round]) : cap;
      for (size_t i = 0; i < p.children.size(); ++i) {
        if (!known[i]) known[i] = Collect(p.children[i], bound);
        any = any || known[i].has_value();
      }
      if (bound == cap) break;
    }
    if (!any) return std::nullopt;
    size_t base = 0;
    for (size_t i = 0; i < known.size(); ++i) {
      if (known[i] && (!known[base] || known[i]->size() < known[base]->size())) base = i;
    }
    Matches out = std::move(*known[base]);
    const size_t limit = std::max<size_t>(out.size(), 1) * kIntersectRatio;
    bool every_child = true;
    for (size_t i = 0; i < known.size(); ++i) {
      if (i == base) continue;
      if (known[i] && known[i]->size() <= limit) {
        out = Intersect(std::move(out), *known[i]);
      } else {
        every_child = false;
      }
    }
    if (!p.exact || !every_child) {
      for (Match& m : out) m.verify = true;  // the rest of the `and` is checked per video
    }
    return out;
  }

  IndexReader& reader_;
  QueryRun* run_;
};

}  // namespace

QueryRun RunQuery(IndexReader& reader, const QueryExpr& expr) {
  QueryRun run;
  const IndexHandles& ix = reader.ix();
  std::map<std::string, index::MetaFieldValue> fields;
  for (const MetaField& f : reader.Fields()) fields[f.name] = {f.number, f.form};
  const QueryPlan plan = PlanQuery(expr, fields);
  run.plan = DescribePlan(plan);
  const QueryProgram program(expr);
  QueryProgram::Scratch scratch;
  std::string error;
  auto check = [&](std::string_view id, const index::VideoMetaView& v) {
    ++run.records;
    const VideoFacts facts{id, v.frames, v.chunk, v.meta_data};
    const bool match = program.Matches(facts, &scratch, &error);
    if (!error.empty()) {
      throw CorruptionError("select in " + ix.dir + ": meta of id '" + std::string(id) +
                            "': " + error);
    }
    return match;
  };
  if (plan.kind != QueryPlan::Kind::kScan) {
    Executor executor(reader, &run);
    Matches found = *executor.Collect(plan, std::numeric_limits<size_t>::max());
    run.ids.reserve(found.size());
    for (Match& m : found) {
      if (m.verify) {
        const std::optional<index::VideoMetaView> v = reader.Video(m.id);
        if (!v) {
          throw CorruptionError("select in " + ix.dir + ": the meta index lists id '" + m.id +
                                "' that has no record");
        }
        if (!check(m.id, *v)) continue;
      }
      run.ids.push_back(std::move(m.id));
    }
    return run;
  }
  // No index for the query: every record, in id order (cheap to read), then
  // the matches in the order Ids() gives.
  Matches found;
  reader.Videos({}, {}, [&](std::string_view id, const index::VideoMetaView& v) {
    if (check(id, v)) found.push_back(Match{v.chunk, v.seq, std::string(id), false});
    return true;
  });
  std::sort(found.begin(), found.end(), Before);
  run.ids.reserve(found.size());
  for (Match& m : found) run.ids.push_back(std::move(m.id));
  return run;
}

}  // namespace gulpdb::engine
