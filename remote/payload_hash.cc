#include "remote/payload_hash.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
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

std::string Finish(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &n) != 1) {
    throw IoError("hash payload: EVP_DigestFinal_ex failed");
  }
  return std::string(reinterpret_cast<const char*>(digest), n);
}

std::string Hex(std::string_view digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest.size());
  for (const char c : digest) {
    const auto b = static_cast<unsigned char>(c);
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xF]);
  }
  return hex;
}

std::string FinishHex(EVP_MD_CTX* ctx) { return Hex(Finish(ctx)); }

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// SHA-256 and MD5 side by side.
class TwoDigests {
 public:
  TwoDigests() : sha_(NewContext(EVP_sha256())), md5_(NewContext(EVP_md5())) {}
  void Update(const void* data, size_t n) {
    remote::Update(sha_.get(), data, n);
    remote::Update(md5_.get(), data, n);
  }
  PayloadDigests Finish() {
    PayloadDigests out;
    out.sha256_hex = FinishHex(sha_.get());
    const std::string md5 = remote::Finish(md5_.get());
    out.md5_hex = Hex(md5);
    out.md5_base64 = Base64(md5);
    return out;
  }

 private:
  MdCtx sha_;
  MdCtx md5_;
};

// Feeds `length` bytes of `fd` from `offset` to `update`.
template <typename Update>
void ReadRegion(int fd, const std::string& path, uint64_t offset, uint64_t length,
                Update&& update) {
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

}  // namespace

std::string Sha256Hex(std::string_view data) {
  MdCtx ctx = NewContext(EVP_sha256());
  Update(ctx.get(), data.data(), data.size());
  return FinishHex(ctx.get());
}

std::string Sha256HexOfFile(int fd, const std::string& path, uint64_t offset, uint64_t length) {
  MdCtx ctx = NewContext(EVP_sha256());
  ReadRegion(fd, path, offset, length,
             [&](const char* data, size_t n) { Update(ctx.get(), data, n); });
  return FinishHex(ctx.get());
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

bool IsMd5Etag(std::string_view etag) {
  if (etag.size() != 34 || etag.front() != '"' || etag.back() != '"') return false;
  for (const char c : etag.substr(1, 32)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace gulpdb::remote
