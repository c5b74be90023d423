// The ingest command line (gulpdb/ingest.h): one table of the options of an
// ingest — name, kind, default, help, the IngestOptions field each sets and
// the rules of its value — that `gulpdb ingest`, `gulpdb create` (its three
// settings of a new dataset), distributed ingest's command line and
// gulpdb.distributed.ingest() all read, so that an option means the same and
// is checked the same way wherever it is given. The defaults are
// IngestOptions' own: the table prints them, it does not restate them.
#include "ingest/command_options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "gulpdb/ingest.h"

namespace gulpdb::ingest {
namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

std::string FormatReal(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.15g", v);
  return text;
}

// What a value of an option may be: its kind and, for numbers, its range.
struct Rule {
  OptionKind kind = OptionKind::kText;
  double min = 0;                 // kNumber
  double max = 0;                 // kNumber
  uint64_t umin = 0;              // kWholeNumber
  uint64_t umax = 0;              // kWholeNumber
  const char* choices = nullptr;  // kChoice: "a|b|c"
};

// One option: what the world sees, and how it reads and writes its field.
struct Entry {
  IngestOptionInfo info;
  Rule rule;
  std::function<void(IngestOptions*, const std::string&)> set;  // from checked text
  std::function<std::string(const IngestOptions&)> get;         // as text ("" when unset)
};

// The options, in the order --help lists them. Defaults come from a default
// IngestOptions through `get`.
std::vector<Entry> MakeTable() {
  using K = OptionKind;
  std::vector<Entry> t;
  const auto path = [&t](const char* name, const char* value_name, const char* help,
                         std::string IngestOptions::*field) {
    Entry e;
    e.info = {name, 0, K::kPath, value_name, "", help, true};
    e.rule.kind = K::kPath;
    e.set = [field](IngestOptions* o, const std::string& v) { o->*field = v; };
    e.get = [field](const IngestOptions& o) { return o.*field; };
    t.push_back(std::move(e));
  };
  const auto whole = [&t](const char* name, char short_name, const char* help, uint64_t min,
                          uint64_t max, std::function<void(IngestOptions*, uint64_t)> set,
                          std::function<std::string(const IngestOptions&)> get) {
    Entry e;
    e.info = {name, short_name, K::kWholeNumber, "N", "", help, true};
    e.rule.kind = K::kWholeNumber;
    e.rule.umin = min;
    e.rule.umax = max;
    e.set = [set](IngestOptions* o, const std::string& v) {
      set(o, std::strtoull(v.c_str(), nullptr, 10));
    };
    e.get = std::move(get);
    t.push_back(std::move(e));
  };
  const auto flag = [&t](const char* name, char short_name, const char* help,
                         std::function<void(IngestOptions*, bool)> set,
                         std::function<bool(const IngestOptions&)> get) {
    Entry e;
    e.info = {name, short_name, K::kSwitch, "", "", help, true};
    e.rule.kind = K::kSwitch;
    e.set = [set](IngestOptions* o, const std::string& v) { set(o, v == "true"); };
    e.get = [get](const IngestOptions& o) { return std::string(get(o) ? "true" : "false"); };
    t.push_back(std::move(e));
  };

  path("videos-dir", "D",
       "videos, each DIR/<id>.<ext> or the one file in DIR/<id>/, decoded by ffmpeg",
       &IngestOptions::videos_dir);
  path("frames-dir", "D", "one sub-folder of JPEG frames per video", &IngestOptions::frames_dir);
  path("images-dir", "D",
       "one sub-folder of images per class (with --image-list: the root of its paths)",
       &IngestOptions::images_dir);
  path("image-list", "FILE",
       "text file of image paths, one per line, each optionally followed by ;label",
       &IngestOptions::image_list);
  path("labels", "LIST",
       "for --videos-dir or --frames-dir: a 20BN-style JSON list [{\"id\": ..., \"label\": ...}] "
       "or CSV id;label, told apart by content: JSON when it starts with '[' or '{' "
       "(default: every video found, unlabeled)",
       &IngestOptions::labels);
  {
    Entry e;
    e.info = {"label-name",
              0,
              K::kText,
              "KEY",
              "",
              "key of the label in a JSON list (e.g. template); the meta keeps GulpIO's "
              "{\"id\", \"label\", \"idx\"}",
              true};
    e.rule.kind = K::kText;
    e.set = [](IngestOptions* o, const std::string& v) { o->label_name = v; };
    e.get = [](const IngestOptions& o) { return o.label_name; };
    t.push_back(std::move(e));
  }
  {
    Entry e;
    e.info = {"frame-rate", 0,  K::kNumber,
              "FPS",        "", "frames per second taken from videos (0: every frame)",
              true};
    e.rule.kind = K::kNumber;
    e.rule.min = 0;
    e.rule.max = 1000;
    e.set = [](IngestOptions* o, const std::string& v) {
      o->frame_rate = std::strtod(v.c_str(), nullptr);
    };
    e.get = [](const IngestOptions& o) { return FormatReal(o.frame_rate); };
    t.push_back(std::move(e));
  }
  whole(
      "frame-size", 0,
      "resize frames so that their short edge has this many pixels (0: keep the size)", 0, 65500,
      [](IngestOptions* o, uint64_t v) { o->frame_size = static_cast<int>(v); },
      [](const IngestOptions& o) { return std::to_string(o.frame_size); });
  whole(
      "quality", 0, "JPEG quality of encoded frames (1-100)", 1, 100,
      [](IngestOptions* o, uint64_t v) { o->quality = static_cast<int>(v); },
      [](const IngestOptions& o) { return std::to_string(o.quality); });
  flag(
      "keep-jpeg", 0, "store JPEG frames and images byte for byte instead of re-encoding them",
      [](IngestOptions* o, bool v) { o->keep_jpeg = v; },
      [](const IngestOptions& o) { return o.keep_jpeg; });
  {
    Entry e;
    e.info = {"codec",
              0,
              K::kChoice,
              "CODEC",
              "",
              "how frames are stored: jpeg (GulpIO's layout) or h264 (each video one H.264 "
              "stream: several times smaller, decoded frame-exactly on read; videos only; "
              "4:4:4 when a frame's width or height is odd). A new dataset takes it; an "
              "existing one must have it",
              true};
    e.rule.kind = K::kChoice;
    e.rule.choices = "jpeg|h264";
    e.set = [](IngestOptions* o, const std::string& v) {
      o->codec = CodecFromName(v).value_or(Codec::kJpeg);
    };
    e.get = [](const IngestOptions& o) { return std::string(CodecName(o.codec)); };
    t.push_back(std::move(e));
  }
  whole(
      "gop", 0,
      "with --codec h264: frames per group of pictures (a keyframe every N frames; reading "
      "a frame decodes at most N)",
      1, 1000, [](IngestOptions* o, uint64_t v) { o->gop = static_cast<int>(v); },
      [](const IngestOptions& o) { return std::to_string(o.gop); });
  whole(
      "crf", 0, "with --codec h264: libx264's constant quality (0-51, lower is better and larger)",
      0, 51, [](IngestOptions* o, uint64_t v) { o->crf = static_cast<int>(v); },
      [](const IngestOptions& o) { return std::to_string(o.crf); });
  {
    Entry e;
    e.info = {"ffmpeg",  0,  K::kText,
              "PROGRAM", "", "the ffmpeg program that decodes videos (looked up on PATH)",
              true};
    e.rule.kind = K::kText;
    e.set = [](IngestOptions* o, const std::string& v) { o->ffmpeg = v; };
    e.get = [](const IngestOptions& o) { return o.ffmpeg; };
    t.push_back(std::move(e));
  }
  whole(
      "num-workers", 'j', "threads that decode and encode (0: one per core)", 0, 1024,
      [](IngestOptions* o, uint64_t v) { o->num_workers = static_cast<size_t>(v); },
      [](const IngestOptions& o) { return std::to_string(o.num_workers); });
  t.back().info.distributed = false;  // distributed ingest has --task-threads per task
  flag(
      "shuffle", 0, "ingest the sources in random order",
      [](IngestOptions* o, bool v) { o->shuffle = v; },
      [](const IngestOptions& o) { return o.shuffle; });
  whole(
      "seed", 0, "seed of --shuffle (default: random, printed)", 0, kMaxU64,
      [](IngestOptions* o, uint64_t v) { o->seed = v; },
      [](const IngestOptions& o) { return o.seed ? std::to_string(*o.seed) : std::string(); });
  whole(
      "batch", 0, "videos per committed transaction", 1, 1000000000,
      [](IngestOptions* o, uint64_t v) { o->batch = static_cast<size_t>(v); },
      [](const IngestOptions& o) { return std::to_string(o.batch); });
  {
    Entry e;
    e.info = {"on-duplicate",
              0,
              K::kChoice,
              "POLICY",
              "",
              "an id already in the dataset (or listed twice): error, skip or replace",
              true};
    e.rule.kind = K::kChoice;
    e.rule.choices = "error|skip|replace";
    e.set = [](IngestOptions* o, const std::string& v) {
      o->on_duplicate = OnDuplicateFromName(v).value_or(OnDuplicate::kError);
    };
    e.get = [](const IngestOptions& o) { return std::string(OnDuplicateName(o.on_duplicate)); };
    t.push_back(std::move(e));
  }
  flag(
      "strict", 0, "stop at the first bad source instead of skipping it",
      [](IngestOptions* o, bool v) { o->strict = v; },
      [](const IngestOptions& o) { return o.strict; });
  flag(
      "quiet", 'q', "no progress output", [](IngestOptions* o, bool v) { o->quiet = v; },
      [](const IngestOptions& o) { return o.quiet; });
  whole(
      "videos-per-chunk", 0, "start a new chunk after this many videos (a new dataset only)", 1,
      std::numeric_limits<uint32_t>::max(),
      [](IngestOptions* o, uint64_t v) { o->videos_per_chunk = static_cast<uint32_t>(v); },
      [](const IngestOptions& o) { return std::to_string(o.videos_per_chunk); });
  whole(
      "bytes-per-chunk", 0,
      "also start a new chunk past this many bytes (0: no limit; a new dataset only)", 0, kMaxU64,
      [](IngestOptions* o, uint64_t v) { o->bytes_per_chunk = v; },
      [](const IngestOptions& o) { return std::to_string(o.bytes_per_chunk); });
  flag(
      "no-checksums", 0, "do not store a CRC-32C per frame (a new dataset only)",
      [](IngestOptions* o, bool v) { o->checksums = !v; },
      [](const IngestOptions& o) { return !o.checksums; });

  const IngestOptions defaults;
  for (Entry& e : t) {
    if (e.info.kind != K::kSwitch) e.info.default_text = e.get(defaults);
  }
  return t;
}

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = MakeTable();
  return table;
}

// "frame_rate" and "frame-rate" name the same option.
std::string Canonical(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

const Entry* Find(std::string_view name) {
  const std::string canonical = Canonical(name);
  for (const Entry& e : Table()) {
    if (e.info.name == canonical) return &e;
  }
  return nullptr;
}

// The text of a value of `e` made canonical (a switch: "true" or "false"),
// or InvalidArgumentError naming the option and the value.
std::string Checked(const Entry& e, const std::string& text) {
  const std::string& name = e.info.name;
  switch (e.rule.kind) {
    case OptionKind::kPath:
    case OptionKind::kText:
      if (text.empty()) throw InvalidArgumentError("--" + name + " is an empty string");
      return text;
    case OptionKind::kSwitch:
      if (text == "true" || text == "1") return "true";
      if (text == "false" || text == "0") return "false";
      throw InvalidArgumentError("--" + name + " is a switch: true or false, not '" + text + "'");
    case OptionKind::kChoice: {
      const std::string choices = e.rule.choices;
      if (("|" + choices + "|").find("|" + text + "|") == std::string::npos || text.empty()) {
        std::string listed = choices;
        const size_t last = listed.rfind('|');
        listed = listed.substr(0, last) + " or " + listed.substr(last + 1);
        for (size_t bar; (bar = listed.find('|')) != std::string::npos;)
          listed.replace(bar, 1, ", ");
        throw InvalidArgumentError("--" + name + " must be " + listed + ", not '" + text + "'");
      }
      return text;
    }
    case OptionKind::kWholeNumber:
      return std::to_string(ParseWholeNumber(name, text, e.rule.umin, e.rule.umax));
    case OptionKind::kNumber:
      return FormatReal(ParseNumber(name, text, e.rule.min, e.rule.max));
  }
  return text;
}

}  // namespace

uint64_t ParseWholeNumber(const std::string& name, const std::string& text, uint64_t min,
                          uint64_t max) {
  const std::string what =
      max == kMaxU64 ? "a whole number >= " + std::to_string(min)
                     : "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  uint64_t value = 0;
  bool ok = !text.empty();
  for (char c : text) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (c < '0' || c > '9' || value > (kMaxU64 - digit) / 10) {
      ok = false;
      break;
    }
    value = value * 10 + digit;
  }
  if (!ok || value < min || value > max) {
    throw InvalidArgumentError("--" + name + " must be " + what + ", not '" + text + "'");
  }
  return value;
}

double ParseNumber(const std::string& name, const std::string& text, double min, double max) {
  const std::string what = "a number from " + FormatReal(min) + " to " + FormatReal(max);
  // strtod also takes hex, "inf", "nan" and leading blanks: only plain decimals pass.
  bool plain = !text.empty();
  for (char c : text) {
    plain = plain &&
            ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+');
  }
  char* end = nullptr;
  errno = 0;
  const double value = plain ? std::strtod(text.c_str(), &end) : 0;
  if (!plain || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value) ||
      value < min || value > max) {
    throw InvalidArgumentError("--" + name + " must be " + what + ", not '" + text + "'");
  }
  return value;
}

const std::vector<IngestOptionInfo>& IngestCommandOptions() {
  static const std::vector<IngestOptionInfo> infos = [] {
    std::vector<IngestOptionInfo> out;
    for (const Entry& e : Table()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

void SetIngestOption(IngestOptions* options, std::string_view name, const std::string& text) {
  const Entry* e = Find(name);
  if (e == nullptr) {
    throw InvalidArgumentError("ingest option '" + std::string(name) + "': no such option");
  }
  e->set(options, Checked(*e, text));
}

std::optional<std::string> IngestOptionText(const IngestOptions& options, std::string_view name) {
  const Entry* e = Find(name);
  if (e == nullptr) {
    throw InvalidArgumentError("ingest option '" + std::string(name) + "': no such option");
  }
  std::string text = e->get(options);
  if (text.empty()) return std::nullopt;
  return text;
}

std::string CheckOptionValues(const IngestOptions& options) {
  for (const Entry& e : Table()) {
    const std::string text = e.get(options);
    if (text.empty() || e.rule.kind == OptionKind::kPath || e.rule.kind == OptionKind::kSwitch) {
      continue;
    }
    try {
      Checked(e, text);
    } catch (const InvalidArgumentError& error) {
      return error.what();
    }
  }
  return "";
}

std::vector<std::string> IgnoredIngestOptions(const IngestOptions& o,
                                              const std::vector<std::string>& given_names) {
  std::set<std::string> given;
  for (const std::string& n : given_names) given.insert(Canonical(n));
  std::vector<std::string> out;
  if (given.count("seed") != 0 && !o.shuffle) out.push_back("--seed is ignored without --shuffle");
  if (given.count("label-name") != 0 && o.labels.empty()) {
    out.push_back("--label-name is ignored without --labels");
  }
  if (given.count("frame-rate") != 0 && o.videos_dir.empty() && o.sources.empty()) {
    out.push_back("--frame-rate is ignored: it applies to --videos-dir only");
  }
  if (given.count("quality") != 0 && o.keep_jpeg && !o.frames_dir.empty()) {
    out.push_back("--quality is ignored: --keep-jpeg stores the JPEG frames as they are");
  }
  if (o.codec != Codec::kH264) {
    for (const char* name : {"gop", "crf"}) {
      if (given.count(name) != 0) {
        out.push_back(std::string("--") + name + " is ignored: it applies to --codec h264 only");
      }
    }
  } else if (given.count("quality") != 0) {
    out.push_back("--quality is ignored: --codec h264 stores no JPEG (see --crf)");
  }
  const bool shapes = given.count("videos-per-chunk") + given.count("bytes-per-chunk") +
                          given.count("no-checksums") !=
                      0;
  if (!shapes || o.dir.empty() || !Dataset::Exists(o.dir, o.index_dir)) return out;
  OpenOptions open;
  open.index_dir = o.index_dir;
  open.allow_network_index = true;  // one look at the settings, not a long-lived reader
  const DatasetStats s = Dataset::Open(o.dir, open)->Stats();
  const std::string prefix = " is ignored: " + o.dir + " is an existing dataset with ";
  if (given.count("videos-per-chunk") != 0 && o.videos_per_chunk != s.videos_per_chunk) {
    out.push_back("--videos-per-chunk " + std::to_string(o.videos_per_chunk) + prefix +
                  std::to_string(s.videos_per_chunk) + " videos per chunk");
  }
  if (given.count("bytes-per-chunk") != 0 && o.bytes_per_chunk != s.bytes_per_chunk) {
    out.push_back("--bytes-per-chunk " + std::to_string(o.bytes_per_chunk) + prefix +
                  (s.bytes_per_chunk == 0
                       ? std::string("no byte limit per chunk")
                       : std::to_string(s.bytes_per_chunk) + " bytes per chunk"));
  }
  if (given.count("no-checksums") != 0 && !o.checksums && s.checksums) {
    out.push_back("--no-checksums" + prefix + "a checksum per frame");
  }
  return out;
}

}  // namespace gulpdb::ingest
