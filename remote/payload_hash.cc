#include "remote/payload_hash.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "gulpdb/error.h"
#include "util/sys_error.h"

namespace gulpdb::remote {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

MdCtx NewContext(const EVP_MD* md) {
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) {
    throw IoError("hash payload: OpenSSL could not initialise a digest");
  }
  return ctx;
}

void Update(EVP_MD_CTX* ctx, const void* data, size_t n) {
  if (EVP_DigestUpdate(ctx, data, n) != 1) throw IoError("hash payload: EVP_DigestUpdate failed");
}

std::string FinishHex(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &n) != 1) {
    throw IoError("hash payload: EVP_DigestFinal_ex failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  MdCtx ctx = NewContext(EVP_sha256());
  Update(ctx.get(), data.data(), data.size());
  return FinishHex(ctx.get());
}

std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  MdCtx ctx = NewContext(EVP_sha256());
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
    Update(ctx.get(), buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return FinishHex(ctx.get());
}

}  // namespace gulpdb::remote
