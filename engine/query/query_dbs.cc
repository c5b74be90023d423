#include "engine/query/query_dbs.h"

#include "gulpdb/error.h"
#include "index/query_keys.h"

namespace gulpdb::engine {
namespace {

struct Slot {
  std::atomic<index::Dbi>* handle;
  const char* name;
};

}  // namespace

void QueryDbs::Refresh(index::Env& env) {
  for (Slot slot :
       {Slot{&meta_fields_, index::kMetaFieldsDb}, Slot{&meta_index_, index::kMetaIndexDb},
        Slot{&splits_, index::kSplitsDb}, Slot{&split_members_, index::kSplitMembersDb},
        Slot{&split_refs_, index::kSplitRefsDb}}) {
    if (slot.handle->load() != 0) continue;
    try {
      slot.handle->store(env.OpenDb(slot.name, /*create=*/false));
    } catch (const NotFoundError&) {
      // Not created yet: no meta index, no split.
    }
  }
}

void QueryDbs::Create(index::Env& env) {
  for (Slot slot :
       {Slot{&meta_fields_, index::kMetaFieldsDb}, Slot{&meta_index_, index::kMetaIndexDb},
        Slot{&splits_, index::kSplitsDb}, Slot{&split_members_, index::kSplitMembersDb},
        Slot{&split_refs_, index::kSplitRefsDb}}) {
    if (slot.handle->load() == 0) slot.handle->store(env.OpenDb(slot.name, /*create=*/true));
  }
}

QueryDbHandles QueryDbs::Load() const {
  QueryDbHandles h;
  h.meta_fields = meta_fields_.load();
  h.meta_index = meta_index_.load();
  h.splits = splits_.load();
  h.split_members = split_members_.load();
  h.split_refs = split_refs_.load();
  return h;
}

}  // namespace gulpdb::engine
