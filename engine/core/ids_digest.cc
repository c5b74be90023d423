#include "engine/core/ids_digest.h"

#include <limits>

#include "gulpdb/dataset.h"
#include "gulpdb/error.h"
#include "util/coding.h"

namespace gulpdb {
namespace engine {

void IdsDigester::Add(std::string_view id) {
  if (id.size() > std::numeric_limits<uint32_t>::max()) {
    throw InvalidArgumentError("digest ids: id " + std::to_string(count_) + " is " +
                               std::to_string(id.size()) + " bytes long, more than an id can be");
  }
  util::PutFixed32Little(&buffer_, static_cast<uint32_t>(id.size()));
  buffer_.append(id);
  ++count_;
  if (buffer_.size() >= kBuffer) {
    sha_.Update(buffer_);
    buffer_.clear();
  }
}

std::string IdsDigester::FinishHex() {
  sha_.Update(buffer_);
  buffer_.clear();
  count_ = 0;
  return sha_.FinishHex();
}

}  // namespace engine

std::string IdsDigestOf(const std::vector<std::string>& ids) {
  engine::IdsDigester digest;
  for (const std::string& id : ids) digest.Add(id);
  return digest.FinishHex();
}

}  // namespace gulpdb
