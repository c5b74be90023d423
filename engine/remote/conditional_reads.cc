#include "engine/remote/conditional_reads.h"

#include <algorithm>
#include <optional>

#include "engine/remote/manifest_chunks.h"
#include "engine/remote/partition_cache.h"
#include "gulpdb/error.h"
#include "s3/errors.h"

namespace gulpdb::engine {

namespace {

// Published manifests a reader of generation `mine` looks at, newest first,
// when one of its objects changed: the current one, then the copies of the
// generations between (at most kMaxCopies of them).
constexpr uint64_t kMaxCopies = 64;

std::string GraceText(int64_t seconds) {
  if (seconds % 86400 == 0 && seconds > 0) return std::to_string(seconds / 86400) + " d";
  if (seconds % 3600 == 0 && seconds > 0) return std::to_string(seconds / 3600) + " h";
  return std::to_string(seconds) + " s";
}

}  // namespace

void ConditionalReads::ThrowMissing(const std::string& what, const std::string& cause) const {
  throw CorruptionError(
      what + ": an object that the manifest (generation " + std::to_string(manifest_.generation) +
      ", published " + IsoTime(manifest_.created_unix) + ") names is missing (" + cause +
      "). Either it was deleted behind the manifest's back, or this dataset was opened from a "
      "manifest that a newer push superseded more than the grace period (" +
      GraceText(manifest_.grace_seconds) +
      ") ago, after which a later push deleted it: open the dataset again to read the newest "
      "generation");
}

void ConditionalReads::Read(const std::vector<StoreRange>& ranges, const std::string& what) const {
  std::vector<StoreRange> conditional = ranges;
  // A push may grow an object while this reads it; a few rounds of
  // accepting its new ETag are enough (each needs a push).
  constexpr int kRounds = 4;
  for (int round = 1;; ++round) {
    for (StoreRange& r : conditional) r.if_match = chunks_.AcceptedEtag(r.key);
    try {
      store_.GetRanges(conditional);
      return;
    } catch (const remote::PreconditionFailedError& e) {
      std::string asked;
      for (const StoreRange& r : conditional) {
        if (r.key == e.key()) asked = r.if_match;
      }
      if (e.key().empty() || asked.empty() || round == kRounds) {
        throw CorruptionError(what + ": " + e.what() +
                              ": the object was replaced behind the manifest's back");
      }
      Revalidate(e.key(), asked, what);
    } catch (const NotFoundError& e) {
      ThrowMissing(what, e.what());
    } catch (const remote::RangeNotSatisfiableError& e) {
      throw CorruptionError(what + ": " + e.what() +
                            ": the object is shorter than the committed length the manifest "
                            "gives: it was truncated or replaced behind the manifest's back");
    } catch (const Error& e) {
      e.ThrowWithContext(what + ": ");
    }
  }
}

void ConditionalReads::Revalidate(const std::string& key, const std::string& asked,
                                  const std::string& what) const {
  std::lock_guard<std::mutex> serial(revalidate_mutex_);
  if (chunks_.AcceptedEtag(key) != asked) return;  // another thread accepted a new one meanwhile
  const ManifestChunk* mine = chunks_.LoadedChunkOfKey(key);
  const std::string name = store_.Name(key);
  if (mine == nullptr) {
    throw CorruptionError(what + ": " + name +
                          " changed behind the manifest's back (HTTP 412 on If-Match)");
  }
  const std::optional<StoreObject> now = store_.Head(key);
  if (!now) ThrowMissing(what, "HEAD " + name + ": HTTP 404");
  if (now->size < mine->committed_length) {
    throw CorruptionError(what + ": " + name + " is " + std::to_string(now->size) +
                          " bytes, shorter than the committed length " +
                          std::to_string(mine->committed_length) + " that generation " +
                          std::to_string(manifest_.generation) +
                          " gives: it was truncated or replaced behind the manifest's back");
  }
  const auto meta = [&](const char* field) {
    const auto it = now->metadata.find(field);
    return it == now->metadata.end() ? std::string() : it->second;
  };
  // Does `c`, the entry of a manifest of this dataset at this generation or
  // newer, vouch for the object now there?
  const auto vouches = [&](const ManifestChunk& c) {
    if (c.committed_length < mine->committed_length) return false;
    if (!c.etag.empty() && c.etag == now->etag) return true;
    // A push (perhaps still running) that checked the object's prefix
    // against this entry's promise before replacing it.
    return c.crc32c.has_value() &&
           meta(kMetaPrefix) == PromiseText(c.committed_length, *c.crc32c) &&
           (manifest_.dataset.empty() || meta(kMetaDataset) == manifest_.dataset);
  };
  bool accepted = vouches(*mine);
  const auto consider = [&](const std::string& manifest_key, std::optional<uint64_t>* generation) {
    Manifest m;
    try {
      m = ParseManifest(store_.Get(manifest_key, kMaxManifestBytes), store_.Name(manifest_key));
    } catch (const NotFoundError&) {
      return;
    }
    if (generation != nullptr) *generation = m.generation;
    if (m.generation <= manifest_.generation || m.dataset != manifest_.dataset) return;
    if (m.paged()) {
      // Only the page that would hold this chunk.
      for (const ManifestChunkPage& p : m.chunk_pages) {
        if (p.first / kChunksPerPage != mine->number / kChunksPerPage) continue;
        for (const ManifestChunk& c : FetchChunkPage(store_, m, p, what)) {
          if (c.key == key && vouches(c)) accepted = true;
        }
      }
      return;
    }
    for (const ManifestChunk& c : m.chunks) {
      if (c.key == key && vouches(c)) accepted = true;
    }
  };
  std::optional<uint64_t> current;
  if (!accepted) consider(kManifestKey, &current);
  if (!accepted && current && *current > manifest_.generation + 1) {
    const uint64_t lowest =
        std::max(manifest_.generation + 1, *current - std::min(*current, kMaxCopies));
    for (uint64_t g = *current - 1; !accepted && g >= lowest && g > manifest_.generation; --g) {
      consider(ManifestHistoryKey(g), nullptr);
    }
  }
  if (!accepted) {
    throw CorruptionError(what + ": " + name +
                          " was replaced behind the manifest's back: its ETag is now " + now->etag +
                          ", not the " + mine->etag + " that generation " +
                          std::to_string(manifest_.generation) +
                          " names, and no newer published manifest of this dataset vouches "
                          "for its committed bytes (HTTP 412 on If-Match)");
  }
  chunks_.Accept(key, now->etag);
}

}  // namespace gulpdb::engine
