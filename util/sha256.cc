#include "util/sha256.h"

#include <openssl/evp.h>

#include "gulpdb/error.h"

namespace gulpdb::util {

struct Sha256::Context {
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx;

  void Init() {
    if (EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
      throw IoError("SHA-256: OpenSSL could not start a digest");
    }
  }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  context_->ctx.reset(EVP_MD_CTX_new());
  if (!context_->ctx) throw IoError("SHA-256: OpenSSL could not make a digest context");
  context_->Init();
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::Update(const void* data, size_t size) {
  if (size == 0) return;
  if (EVP_DigestUpdate(context_->ctx.get(), data, size) != 1) {
    throw IoError("SHA-256: EVP_DigestUpdate failed");
  }
}

std::string Sha256::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(context_->ctx.get(), digest, &n) != 1) {
    throw IoError("SHA-256: EVP_DigestFinal_ex failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  context_->Init();
  return hex;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 sha;
  sha.Update(data);
  return sha.FinishHex();
}

}  // namespace gulpdb::util
