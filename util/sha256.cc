#include "util/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "gulpdb/error.h"
#include "util/sys_error.h"

namespace gulpdb::util {

namespace {

struct CtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_MD_CTX, CtxFree>;

// A digest context of `md`, started; `name` for errors.
Ctx NewContext(const EVP_MD* md, const char* name) {
  Ctx ctx(EVP_MD_CTX_new());
  if (!ctx) throw IoError(std::string(name) + ": OpenSSL could not make a digest context");
  if (EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) {
    throw IoError(std::string(name) + ": OpenSSL could not start a digest");
  }
  return ctx;
}

void UpdateContext(EVP_MD_CTX* ctx, const void* data, size_t size, const char* name) {
  if (size == 0) return;
  if (EVP_DigestUpdate(ctx, data, size) != 1) {
    throw IoError(std::string(name) + ": EVP_DigestUpdate failed");
  }
}

// The digest's bytes; the context starts again, empty.
std::string FinishContext(EVP_MD_CTX* ctx, const EVP_MD* md, const char* name) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &n) != 1) {
    throw IoError(std::string(name) + ": EVP_DigestFinal_ex failed");
  }
  if (EVP_DigestInit_ex(ctx, md, nullptr) != 1) {
    throw IoError(std::string(name) + ": OpenSSL could not start a digest");
  }
  return std::string(reinterpret_cast<const char*>(digest), n);
}

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes.size());
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xF]);
  }
  return hex;
}

// Gives `update` the `length` bytes of `fd` from `offset`, piece by piece.
template <typename Update>
void ReadRegion(int fd, const std::string& path, uint64_t offset, uint64_t length,
                const Update& update) {
  std::vector<char> buf(size_t{1} << 20);
  uint64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) util::ThrowErrno("read", path, errno);
    if (n == 0) {
      throw IoError("read " + path + ": file ends at " + std::to_string(offset + done) +
                    ", before the " + std::to_string(length) + " bytes from offset " +
                    std::to_string(offset) + " to upload");
    }
    update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
}

// SHA-256 and MD5 side by side.
class TwoDigests {
 public:
  void Update(const void* data, size_t n) {
    sha_.Update(data, n);
    md5_.Update(data, n);
  }
  PayloadDigests Finish() {
    PayloadDigests out;
    out.sha256_hex = sha_.FinishHex();
    util::Md5::Digest md5 = md5_.Finish();
    out.md5_hex = std::move(md5.hex);
    out.md5_base64 = std::move(md5.base64);
    return out;
  }

 private:
  util::Sha256 sha_;
  util::Md5 md5_;
};

}  // namespace

struct Sha256::Context {
  Ctx ctx = NewContext(EVP_sha256(), "SHA-256");
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::Update(const void* data, size_t size) {
  UpdateContext(context_->ctx.get(), data, size, "SHA-256");
}

std::string Sha256::FinishHex() {
  return Hex(FinishContext(context_->ctx.get(), EVP_sha256(), "SHA-256"));
}

struct Md5::Context {
  Ctx ctx = NewContext(EVP_md5(), "MD5");
};

Md5::Md5() : context_(std::make_unique<Context>()) {}
Md5::~Md5() = default;
Md5::Md5(Md5&&) noexcept = default;
Md5& Md5::operator=(Md5&&) noexcept = default;

void Md5::Update(const void* data, size_t size) {
  UpdateContext(context_->ctx.get(), data, size, "MD5");
}

Md5::Digest Md5::Finish() {
  const std::string bytes = FinishContext(context_->ctx.get(), EVP_md5(), "MD5");
  Digest d;
  d.hex = Hex(bytes);
  d.base64.assign(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(d.base64.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  d.base64.resize(static_cast<size_t>(n));
  return d;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 sha;
  sha.Update(data);
  return sha.FinishHex();
}

std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  Sha256 sha;
  ReadRegion(fd, path, offset, length, [&](const char* data, size_t n) { sha.Update(data, n); });
  return sha.FinishHex();
}

PayloadDigests DigestsOf(std::string_view data) {
  TwoDigests d;
  d.Update(data.data(), data.size());
  return d.Finish();
}

PayloadDigests DigestsOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  TwoDigests d;
  ReadRegion(fd, path, offset, length, [&](const char* data, size_t n) { d.Update(data, n); });
  return d.Finish();
}

}  // namespace gulpdb::util
