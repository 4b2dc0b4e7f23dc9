// The process's encryption setting and the TLS 1.3 PSK contexts (see tls_config.h).
#include "util/tls_config.h"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "util/check.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr char kPskIdentity[] = "accl-psk-v1";
constexpr unsigned char kAes128GcmSha256[2] = {0x13, 0x01};
constexpr int kExIndex = 0;  // SSL_CTX "app data": the TlsContext

const TlsContext* contextOf(OsslSsl* ssl, const SslLib& lib) {
  return static_cast<const TlsContext*>(lib.SSL_CTX_get_ex_data(lib.SSL_get_SSL_CTX(ssl), kExIndex));
}

// A resumption-style session carrying the key: what TLS 1.3 calls an external PSK.
OsslSession* pskSession(OsslSsl* ssl, const TlsContext& ctx) {
  const SslLib& lib = ctx.lib();
  const OsslCipher* cipher = lib.SSL_CIPHER_find(ssl, kAes128GcmSha256);
  if (!cipher) return nullptr;
  OsslSession* s = lib.SSL_SESSION_new();
  if (!s) return nullptr;
  if (!lib.SSL_SESSION_set1_master_key(s, ctx.key(), 32) || !lib.SSL_SESSION_set_cipher(s, cipher) ||
      !lib.SSL_SESSION_set_protocol_version(s, ossl::kTls13Version)) {
    lib.SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

const SslLib* gCallbackLib = nullptr;  // set before any context exists; the library never unloads

int useSession(OsslSsl* ssl, const OsslEvpMd*, const unsigned char** id, size_t* idLen, OsslSession** session) {
  const TlsContext* ctx = contextOf(ssl, *gCallbackLib);
  *session = ctx ? pskSession(ssl, *ctx) : nullptr;
  if (!*session) return 0;
  *id = reinterpret_cast<const unsigned char*>(kPskIdentity);
  *idLen = sizeof(kPskIdentity) - 1;
  return 1;
}

int findSession(OsslSsl* ssl, const unsigned char* id, size_t idLen, OsslSession** session) {
  *session = nullptr;
  if (idLen != sizeof(kPskIdentity) - 1 || std::memcmp(id, kPskIdentity, idLen) != 0) return 1;  // unknown
  const TlsContext* ctx = contextOf(ssl, *gCallbackLib);
  *session = ctx ? pskSession(ssl, *ctx) : nullptr;
  return *session ? 1 : 0;
}

OsslSslCtx* makeCtx(const SslLib& lib, const TlsContext* owner, bool server, std::string* why) {
  OsslSslCtx* c = lib.SSL_CTX_new(lib.TLS_method());
  if (!c) {
    *why = "SSL_CTX_new failed";
    return nullptr;
  }
  bool ok = lib.SSL_CTX_ctrl(c, ossl::kCtrlSetMinProto, ossl::kTls13Version, nullptr) == 1 &&
            lib.SSL_CTX_ctrl(c, ossl::kCtrlSetMaxProto, ossl::kTls13Version, nullptr) == 1 &&
            lib.SSL_CTX_set_ciphersuites(c, "TLS_AES_128_GCM_SHA256") == 1 &&
            lib.SSL_CTX_set_ex_data(c, kExIndex, const_cast<TlsContext*>(owner)) == 1;
  // Writes may complete in part and be retried from a moved buffer, like send().
  lib.SSL_CTX_ctrl(c, ossl::kCtrlMode, ossl::kModePartialWrite | ossl::kModeMovingWriteBuffer, nullptr);
  // A peer that closes without close_notify reads as an orderly close, as it does on a plain socket.
  lib.SSL_CTX_set_options(c, ossl::kOpIgnoreUnexpectedEof);
  if (server) {
    lib.SSL_CTX_set_num_tickets(c, 0);  // no resumption tickets: every connection proves the key afresh
    lib.SSL_CTX_set_psk_find_session_callback(c, findSession);
  } else {
    lib.SSL_CTX_set_psk_use_session_callback(c, useSession);
  }
  if (!ok) {
    *why = "configuring TLS 1.3 with TLS_AES_128_GCM_SHA256 failed";
    lib.SSL_CTX_free(c);
    return nullptr;
  }
  return c;
}

struct Setting {
  std::mutex mutex;
  bool decided = false;  // by a call, or by the first look at ACCL_ENCRYPTION_PSK_FILE
  std::shared_ptr<const TlsContext> tls;
};

// Fork safety: a forked rank must not inherit this state half-taken. The bootstrap root is a
// thread of the process that made the unique id, and it reads the setting as connections arrive,
// which is while that process may be forking its ranks (the test launcher, a job that forks
// workers). So: no lazily constructed static (its init guard, taken by the root thread at the
// fork, stayed taken in the child: seen as ranks stuck in __cxa_guard_acquire), the object is
// constant-initialized; and fork() waits for the mutex (pthread_atfork), so the child starts with
// it free.
constinit Setting gSetting;

Setting& setting() { return gSetting; }

void lockBeforeFork() { gSetting.mutex.lock(); }
void unlockAfterFork() { gSetting.mutex.unlock(); }
__attribute__((constructor)) void registerForkHandlers() {
  pthread_atfork(lockBeforeFork, unlockAfterFork, unlockAfterFork);
}

void cleanse(void* p, size_t bytes) {
  volatile uint8_t* b = static_cast<volatile uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) b[i] = 0;
}

ncclResult_t readKeyFile(const std::string& path, std::string* key) {
  FILE* f = fopen(path.c_str(), "re");
  if (!f)
    return fail(ncclInvalidUsage, "ACCL_ENCRYPTION_PSK_FILE=%s: cannot open it: %s", path.c_str(), strerror(errno));
  char buf[4096];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  size_t len = strcspn(buf, "\r\n");
  key->assign(buf, len);
  cleanse(buf, sizeof(buf));
  if (key->size() < kMinPskBytes)
    return fail(ncclInvalidUsage, "ACCL_ENCRYPTION_PSK_FILE=%s: the key (first line) has %zu bytes, at least %zu "
                "needed", path.c_str(), key->size(), kMinPskBytes);
  return ncclSuccess;
}

}  // namespace

TlsContext::~TlsContext() {
  if (client_) lib_->SSL_CTX_free(client_);
  if (server_) lib_->SSL_CTX_free(server_);
  cleanse(key_, sizeof(key_));
}

ncclResult_t TlsContext::make(const char* psk, size_t bytes, std::shared_ptr<const TlsContext>* out) {
  const char* why = nullptr;
  const SslLib* lib = sslLib(&why);
  if (!lib)
    return fail(ncclSystemError, "encryption (NCCL_ENCRYPTION_MODE_PSK) needs OpenSSL 3's libssl: %s", why);
  gCallbackLib = lib;
  const CryptoLib* crypto = cryptoLib(nullptr);
  std::shared_ptr<TlsContext> ctx(new TlsContext());
  ctx->lib_ = lib;
  // The TLS key: HMAC-SHA-256 keyed by the user's key over a fixed label (any length of key in,
  // 32 uniform bytes out).
  static const char kLabel[] = "accl tls1.3 external psk v1";
  unsigned int len = 0;
  if (!crypto->HMAC(crypto->EVP_sha256(), psk, static_cast<int>(bytes), reinterpret_cast<const unsigned char*>(kLabel),
                    sizeof(kLabel) - 1, ctx->key_, &len) ||
      len != 32)
    return fail(ncclSystemError, "encryption: deriving the TLS key with libcrypto's HMAC failed");
  std::string err;
  ctx->client_ = makeCtx(*lib, ctx.get(), /*server=*/false, &err);
  if (ctx->client_) ctx->server_ = makeCtx(*lib, ctx.get(), /*server=*/true, &err);
  if (!ctx->server_) return fail(ncclSystemError, "encryption: %s (libssl.so.3)", err.c_str());
  *out = std::move(ctx);
  return ncclSuccess;
}

ncclResult_t setEncryptionNone() {
  Setting& s = setting();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tls.reset();
  s.decided = true;
  return ncclSuccess;
}

ncclResult_t setEncryptionPsk(const char* psk, size_t bytes) {
  std::shared_ptr<const TlsContext> tls;
  ACCL_CHECK(TlsContext::make(psk, bytes, &tls));
  Setting& s = setting();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tls = std::move(tls);  // the previous context's key is zeroed when its last session goes
  s.decided = true;
  return ncclSuccess;
}

ncclResult_t currentTls(std::shared_ptr<const TlsContext>* out) {
  Setting& s = setting();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.decided) {
    std::string path = paramStr("ACCL_ENCRYPTION_PSK_FILE");
    if (!path.empty()) {
      std::string key;
      ncclResult_t res = readKeyFile(path, &key);
      if (res == ncclSuccess) res = TlsContext::make(key.data(), key.size(), &s.tls);
      cleanse(&key[0], key.size());
      if (res != ncclSuccess) return res;  // undecided: the next connection reports it again
    }
    s.decided = true;
  }
  *out = s.tls;
  return ncclSuccess;
}

}  // namespace accl
