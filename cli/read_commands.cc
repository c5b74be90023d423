// The commands that read a dataset, local or pushed (s3://): `info`, `ls`,
// `show` and `extract` (a video's frames as .jpg files).
#include <sys/stat.h>

#include <cstdio>
#include <optional>
#include <set>

#include "cli/cleanup.h"
#include "cli/command_families.h"
#include "cli/files.h"
#include "cli/frame_names.h"
#include "cli/options.h"
#include "cli/query_commands.h"
#include "cli/text.h"
#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/jpeg.h"
#include "gulpdb/json.h"
#include "gulpdb/remote.h"
#include "util/relative_name.h"

namespace gulpdb::cli {

namespace {

using ull = unsigned long long;

// `info --cache`: the node's frame cache (docs/frame_cache.md), as JSON
// members or as lines of text.
std::string FrameCacheJson(const FrameCacheStats& c, bool reads_through) {
  char text[1024];
  std::snprintf(text, sizeof text,
                ", \"frame_cache\": {\"dir\": %s, \"enabled\": %s, \"reads_through\": %s, "
                "\"bound\": %llu, \"block_bytes\": %llu, \"hits\": %llu, \"misses\": %llu, "
                "\"prefetched\": %llu, \"bytes_from_store\": %llu, \"bytes_from_cache\": %llu, "
                "\"evictions\": %llu, \"bytes_evicted\": %llu, \"damaged\": %llu, "
                "\"refetched\": %llu, \"bytes\": %llu}",
                JsonPathString(c.dir).c_str(), c.enabled ? "true" : "false",
                reads_through ? "true" : "false", ull{c.bound}, ull{c.block_bytes}, ull{c.hits},
                ull{c.misses}, ull{c.prefetched}, ull{c.bytes_from_store}, ull{c.bytes_from_cache},
                ull{c.evictions}, ull{c.bytes_evicted}, ull{c.damaged}, ull{c.refetched},
                ull{c.bytes});
  return text;
}

void PrintFrameCache(const FrameCacheStats& c, bool reads_through) {
  std::printf("frame cache:    %s (%s)\n", EscapeControls(c.dir).c_str(),
              !c.enabled      ? "off: GULPDB_FRAME_CACHE_BYTES=0"
              : reads_through ? "this dataset reads through it"
                              : "a local dataset does not read through it");
  std::printf("  bound:        %llu bytes, blocks of %llu; %llu bytes under it\n", ull{c.bound},
              ull{c.block_bytes}, ull{c.bytes});
  std::printf(
      "  blocks:       %llu hits, %llu misses, %llu prefetched, %llu evicted, %llu damaged, "
      "%llu refetched\n",
      ull{c.hits}, ull{c.misses}, ull{c.prefetched}, ull{c.evictions}, ull{c.damaged},
      ull{c.refetched});
  std::printf("  bytes:        %llu from the store, %llu from the cache (node-wide)\n",
              ull{c.bytes_from_store}, ull{c.bytes_from_cache});
}

std::string CountOrNull(const std::optional<uint64_t>& n) {
  return n ? std::to_string(*n) : "null";
}

// What `info` says of checksums: whether frames are checked when read, and
// how many videos are not (DatasetStats::unverified_videos).
std::string ChecksumsText(const DatasetStats& s) {
  const std::string merged =
      "; chunks merged in place keep their own (`gulpdb check` counts the videos without one)";
  if (!s.unverified_videos) {
    return s.checksums ? "crc32c per frame written here, checked on every read" + merged
                       : "none for frames written here: they are read unverified" + merged;
  }
  if (*s.unverified_videos == 0) return "crc32c per frame, checked on every read";
  return "none: the frames of " + std::to_string(*s.unverified_videos) + " videos (in " +
         std::to_string(*s.unverified_chunks) + " chunks) are read unverified";
}

}  // namespace

int RunInfo(const std::vector<std::string>& args) {
  po::options_description o("info options");
  bool json = false, cache = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)("json", po::bool_switch(&json),
                                                                 "machine-readable output")(
      "cache", po::bool_switch(&cache),
      "also the node's frame cache of remote datasets: its bound and node-wide counters");
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm = Parse(
      args, "gulpdb info DIR [--json] [--cache] [--index-dir PATH] [--version NAME]", o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  const std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  const DatasetStats s = ds->Stats();
  std::optional<FrameCacheStats> frames;
  if (cache) frames = GetFrameCacheStats();
  const bool reads_through = IsRemoteUrl(path.dir) && frames && frames->enabled;
  // What the tags hold (docs/versions.md): their index objects and the chunk
  // files compaction kept for them.
  const uint64_t tag_bytes = IsRemoteUrl(path.dir) ? 0 : ds->VersionBytes();
  const size_t tags = ds->Versions().size();  // a URL: the tags its push published
  if (json) {
    std::printf(
        "{\"path\": %s, \"format_version\": %u, \"creator\": %s, \"videos\": %llu, \"frames\": "
        "%llu, \"chunks\": %llu, \"committed_bytes\": %llu, \"live_bytes\": %llu, "
        "\"garbage_bytes\": %llu, \"index_bytes\": %llu, \"videos_per_chunk\": %u, "
        "\"bytes_per_chunk\": %llu, \"checksums\": %s, \"unverified_videos\": %s, "
        "\"unverified_chunks\": %s, \"codec\": \"%s\", \"tags\": %zu, \"tag_bytes\": %llu%s}\n",
        JsonPathString(path.dir).c_str(), s.format_version, PythonJsonString(s.creator).c_str(),
        static_cast<unsigned long long>(s.videos), static_cast<unsigned long long>(s.frames),
        static_cast<unsigned long long>(s.chunks),
        static_cast<unsigned long long>(s.committed_bytes),
        static_cast<unsigned long long>(s.live_bytes),
        static_cast<unsigned long long>(s.garbage_bytes),
        static_cast<unsigned long long>(s.index_bytes), s.videos_per_chunk,
        static_cast<unsigned long long>(s.bytes_per_chunk), s.checksums ? "true" : "false",
        CountOrNull(s.unverified_videos).c_str(), CountOrNull(s.unverified_chunks).c_str(),
        CodecName(s.codec), tags, static_cast<unsigned long long>(tag_bytes),
        (QueryInfoJson(*ds) + (frames ? FrameCacheJson(*frames, reads_through) : "")).c_str());
    return 0;
  }
  std::printf("dataset:        %s\n", EscapeControls(path.dir).c_str());
  std::printf("format version: %u (%s)\n", s.format_version, EscapeControls(s.creator).c_str());
  std::printf("codec:          %s\n", CodecName(s.codec));
  std::printf("videos:         %llu\n", static_cast<unsigned long long>(s.videos));
  std::printf("frames:         %llu\n", static_cast<unsigned long long>(s.frames));
  std::printf("chunks:         %llu (%u videos per chunk)\n",
              static_cast<unsigned long long>(s.chunks), s.videos_per_chunk);
  std::printf("frame bytes:    %llu (+%llu garbage)\n",
              static_cast<unsigned long long>(s.live_bytes),
              static_cast<unsigned long long>(s.garbage_bytes));
  std::printf("index bytes:    %llu\n", static_cast<unsigned long long>(s.index_bytes));
  std::printf("checksums:      %s\n", ChecksumsText(s).c_str());
  std::printf("tags:           %zu (holding %llu bytes)\n", tags,
              static_cast<unsigned long long>(tag_bytes));
  std::printf("%s", QueryInfoText(*ds).c_str());
  if (frames) PrintFrameCache(*frames, reads_through);
  return 0;
}

int RunLs(const std::vector<std::string>& args) {
  po::options_description o("ls options");
  bool json = false, meta = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "json", po::bool_switch(&json),
      "JSON Lines: one JSON object per line, {\"id\": ..., \"frames\": ..., \"chunk\": ...}")(
      "meta", po::bool_switch(&meta), "also print each video's meta_data")(
      "limit", NumberValue("0"), "print at most N videos (0: all)");
  AddListFilterOptions(&o);
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb ls DIR [--json] [--meta] [--limit N] [--where EXPR]... [--split NAME]\n"
            "          [--index-dir PATH] [--version NAME]\n\n"
            "Prints one video per line, in (chunk, insertion) order (in split order with\n"
            "--split): the id, a tab, the frame count (and a tab and the meta_data with --meta).\n"
            "Ids are printed as the body of a JSON string: \\ \" and control characters\n"
            "(newline, tab, NUL ...) are escaped as JSON escapes them (\\n, \\t, \\u0000), so\n"
            "every line is one video and ls agrees with ls --json.",
            o, {"dir"});
  const DatasetPath path = DatasetArg(vm);
  const uint64_t limit = *UnsignedOption(vm, "limit");
  uint64_t shown = 0;
  const Query where = WhereQuery(vm);  // a bad query is refused before anything opens
  ForEachListed(*OpenDataset(path, /*read_only=*/true), vm, where, [&](const VideoInfo& v) {
    if (json) {
      std::printf("{\"id\": %s, \"frames\": %zu, \"chunk\": %u%s%s}\n",
                  PythonJsonString(v.id).c_str(), v.frames.size(), v.chunk,
                  meta ? ", \"meta_data\": " : "", meta ? v.meta_data.c_str() : "");
    } else {
      std::printf("%s\t%zu%s%s\n", EscapeForDisplay(v.id).c_str(), v.frames.size(),
                  meta ? "\t" : "", meta ? v.meta_data.c_str() : "");
    }
    return ++shown != limit;
  });
  return 0;
}

int RunShow(const std::vector<std::string>& args) {
  po::options_description o("show options");
  bool json = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "id", po::value<std::string>(), "video id")("json", po::bool_switch(&json),
                                                  "machine-readable output");
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm = Parse(
      args, "gulpdb show DIR ID [--json] [--index-dir PATH] [--version NAME]", o, {"dir", "id"});
  const DatasetPath path = DatasetArg(vm);
  const std::string id = vm["id"].as<std::string>();
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  RequirePossibleId(path, id);
  const VideoInfo v = ds->Get(id);
  std::string frame_info = "[";
  for (size_t i = 0; i < v.frames.size(); ++i) {
    if (i != 0) frame_info += ", ";
    frame_info += "[" + std::to_string(v.frames[i].offset) + ", " +
                  std::to_string(v.frames[i].pad) + ", " + std::to_string(v.frames[i].length) + "]";
  }
  frame_info += "]";
  if (json) {
    std::printf("{\"id\": %s, \"chunk\": %u, \"frame_info\": %s, \"meta_data\": %s}\n",
                PythonJsonString(v.id).c_str(), v.chunk, frame_info.c_str(), v.meta_data.c_str());
  } else {
    std::printf("id:         %s\nchunk:      %u\nframes:     %zu\nframe_info: %s\nmeta_data:  %s\n",
                EscapeForDisplay(v.id).c_str(), v.chunk, v.frames.size(), frame_info.c_str(),
                v.meta_data.c_str());
  }
  return 0;
}

int RunExtract(const std::vector<std::string>& args) {
  po::options_description o("extract options");
  std::string out, frames;
  bool force = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "id", po::value<std::string>(), "video id")("output,o", po::value(&out)->required(),
                                                  "output directory (created if missing)")(
      "frames", po::value(&frames)->default_value("all"),
      "frames to write: all, start:stop[:step] or i,j,k")(
      "force", po::bool_switch(&force), "overwrite files that already exist in OUT");
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb extract DIR ID -o OUT [--frames SEL] [--force] [--index-dir PATH]\n"
            "               [--version NAME]\n\n"
            "Writes the selected frames as OUT/<stem>_<frame>.jpg (<frame>: 5 digits or more).\n"
            "<stem> is the id itself when it has only ASCII letters, digits, '.', '_' and '-',\n"
            "does not start with '.', has at most 200 bytes and does not end in '-' and 8 hex\n"
            "digits. Any other id gets <safe>-<hash>: <safe> is the id with every other\n"
            "character replaced by '_' (cut to 200 bytes), <hash> the first 8 hex digits of\n"
            "the 64-bit FNV-1a hash of the id, so distinct ids never share a name and no id\n"
            "writes outside OUT: 'a/b' gives a_b-<hash>_00000.jpg. Existing files are not\n"
            "overwritten unless --force is given.",
            o, {"dir", "id"});
  const DatasetPath path = DatasetArg(vm);
  const std::string id = vm["id"].as<std::string>();
  RequireNonEmpty(vm, {"output", "frames"});
  const Selection selection = Selection::Parse(frames);
  std::unique_ptr<Dataset> ds = OpenDataset(path, /*read_only=*/true);
  RequirePossibleId(path, id);
  // A JPEG dataset's frames are written as stored; an h264 dataset's are
  // decoded and encoded as JPEG (quality 90, 4:4:4).
  std::vector<std::string_view> jpegs;
  std::vector<uint32_t> indices;
  StoredFrames stored;
  std::vector<std::string> encoded;
  if (ds->codec() == Codec::kH264) {
    const DecodedFrames decoded = ds->ReadFrames(id, selection);
    indices = decoded.indices();
    EncodeOptions quality;
    quality.quality = 90;
    quality.subsampling = Subsampling::k444;
    for (size_t i = 0; i < decoded.size(); ++i) {
      const ImageShape& shape = decoded.shape(i);
      encoded.push_back(ThreadLocalEncoder().Encode(decoded.data(i), shape.width, shape.height,
                                                    shape.channels, quality));
    }
    jpegs.assign(encoded.begin(), encoded.end());
  } else {
    stored = ds->ReadJpegs(id, selection);
    indices = stored.indices();
    for (size_t i = 0; i < stored.size(); ++i) jpegs.push_back(stored[i]);
  }

  // Each frame once, however often the selection names it.
  const std::string stem = FrameFileStem(id);
  std::vector<std::pair<std::string, size_t>> files;  // (name, position in jpegs)
  std::set<std::string> names;
  for (size_t i = 0; i < jpegs.size(); ++i) {
    std::string name = FrameFileName(stem, indices[i]);
    // Safe by construction (frame_names.h); checked as every name from a
    // dataset is before it becomes a path.
    util::CheckRelativeName(name, "extract " + EscapeControls(id), "the frame file name");
    if (names.insert(name).second) files.emplace_back(std::move(name), i);
  }
  CreatedPaths created;
  created.Track(out, [&names](const std::string& name) { return names.count(name) != 0; });
  MakeDirectory(out);
  if (!force) {
    std::vector<std::string> existing;
    for (const auto& [name, i] : files) {
      struct stat st;
      if (::lstat((out + "/" + name).c_str(), &st) == 0) existing.push_back(name);
    }
    if (!existing.empty()) {
      throw InvalidArgumentError("extract " + EscapeControls(id) + " to " + out + ": " +
                                 ListForDisplay(existing, 3) +
                                 (existing.size() == 1 ? " exists" : " exist") +
                                 "; nothing was written (--force overwrites)");
    }
  }
  for (const auto& [name, i] : files) {
    WriteNewFile(out + "/" + name, jpegs[i], force ? Overwrite::kReplace : Overwrite::kNever);
  }
  created.Keep();
  std::printf("wrote %zu frames of %s to %s as %s_<frame>.jpg\n", files.size(),
              EscapeForDisplay(id).c_str(), EscapeControls(out).c_str(), stem.c_str());
  return 0;
}

}  // namespace gulpdb::cli
