// Fuzz target: meta values as Dataset::Select compares them
// (engine/query/meta_value.h): the canonical form the meta index stores and
// the scan computes, and the lookup of keys in a video's first meta entry.
//
// Input: the text of one JSON value (a query value, or a video's meta
// entry). Properties checked:
//   - CanonicalMetaValue returns or throws InvalidArgumentError, and accepts
//     exactly what NormalizeJson (the writer's validation) accepts;
//   - equal values keep one form: the text, its NormalizeJson form and the
//     text with whitespace around it have the same canonical form (which is
//     not JSON in general: a number with a huge exponent is "#<its text>");
//   - FindFirstEntryValues never fails on a list whose entry is accepted
//     JSON, finds the same values (by canonical form) in the raw and in the
//     normalised entry, and only returns views inside the text it was given;
//     on the raw input as a meta_data list it returns or reports, never
//     crashes.
#include <string>
#include <string_view>
#include <vector>

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "gulpdb/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kTarget = "meta_value";

// Keys the seeds use, and the empty key.
const std::vector<std::string>& Keys() {
  static const std::vector<std::string> keys = {"\"k\"", "\"label\"", "\"\"", "\"caf\\u00e9\""};
  return keys;
}

bool Inside(std::string_view view, std::string_view text) {
  return view.empty() ||
         (view.data() >= text.data() && view.data() + view.size() <= text.data() + text.size());
}

std::string CanonicalOrEmpty(std::string_view v) {
  return v.empty() ? std::string() : gulpdb::engine::CanonicalMetaValue(v);
}

}  // namespace

extern "C" int GULPDB_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  const std::string_view text = gulpdb::fuzz::AsText(data, size);
  std::vector<std::string_view> values;
  std::string error;
  // Any bytes as a meta_data list: an answer or a report, nothing else.
  if (gulpdb::engine::FindFirstEntryValues(text, Keys(), &values, &error)) {
    for (std::string_view v : values) FUZZ_CHECK(kTarget, Inside(v, text), "a view outside");
  }

  std::string canonical, normalized;
  bool canonical_ok = true, normalized_ok = true;
  try {
    canonical = gulpdb::engine::CanonicalMetaValue(text);
  } catch (const gulpdb::InvalidArgumentError&) {
    canonical_ok = false;
  }
  try {
    normalized = gulpdb::engine::NormalizeJson(text);
  } catch (const gulpdb::InvalidArgumentError&) {
    normalized_ok = false;
  }
  FUZZ_CHECK(kTarget, canonical_ok == normalized_ok,
             std::string("CanonicalMetaValue ") + (canonical_ok ? "accepts" : "refuses") +
                 " what NormalizeJson " + (normalized_ok ? "accepts" : "refuses"));
  if (!canonical_ok) return 0;
  FUZZ_CHECK(kTarget, gulpdb::engine::CanonicalMetaValue(normalized) == canonical,
             "the normalised text has another canonical form");
  const std::string spaced = " \n" + std::string(text) + "\t ";
  FUZZ_CHECK(kTarget, gulpdb::engine::CanonicalMetaValue(spaced) == canonical,
             "whitespace changes the canonical form");

  // The value as the first entry of a meta_data list, raw and normalised.
  const std::string raw_list = "[" + std::string(text) + ", {\"k\": 0}]";
  const std::string normal_list = "[" + normalized + "]";
  std::vector<std::string_view> raw_values, normal_values;
  FUZZ_CHECK(kTarget, gulpdb::engine::FindFirstEntryValues(raw_list, Keys(), &raw_values, &error),
             "a list of valid JSON is refused: " + error);
  FUZZ_CHECK(kTarget,
             gulpdb::engine::FindFirstEntryValues(normal_list, Keys(), &normal_values, &error),
             "a normalised list is refused: " + error);
  for (size_t i = 0; i < Keys().size(); ++i) {
    FUZZ_CHECK(kTarget, Inside(raw_values[i], raw_list), "a view outside the raw list");
    FUZZ_CHECK(kTarget, CanonicalOrEmpty(raw_values[i]) == CanonicalOrEmpty(normal_values[i]),
               "key " + Keys()[i] + " has another value once normalised");
  }
  return 0;
}
