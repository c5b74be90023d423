#include "engine/query/index_handles.h"

#include "engine/json/json_text.h"
#include "engine/query/meta_value.h"
#include "engine/query/value_order.h"
#include "gulpdb/error.h"

namespace gulpdb::engine {

std::vector<MetaField> MakeMetaFields(
    const std::vector<std::pair<std::string, index::MetaFieldValue>>& fields,
    const std::string& where) {
  std::vector<MetaField> out;
  out.reserve(fields.size());
  for (const auto& [name, value] : fields) {
    MetaField f;
    f.name = name;
    f.number = value.number;
    f.form = value.form;
    try {
      f.quoted = PythonJsonString(name);
    } catch (const InvalidArgumentError&) {
      throw CorruptionError(where + ": meta index field name '" + PrintableBytes(name, 40) +
                            "' is not UTF-8");
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string MetaKeyValue(index::MetaKeyForm form, std::string_view json) {
  return form == index::MetaKeyForm::kCanonical ? CanonicalMetaValue(json) : OrderedMetaValue(json);
}

std::string IndexHandles::Seal(std::string_view key, std::string value) const {
  return sealed ? index::Seal(key, std::move(value)) : value;
}

std::string_view IndexHandles::Unseal(std::string_view key, std::string_view value,
                                      index::RecordKind kind) const {
  return sealed ? index::Unseal(key, value, kind, dir) : value;
}

}  // namespace gulpdb::engine
