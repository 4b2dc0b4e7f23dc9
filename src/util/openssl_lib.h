// OpenSSL 3 (libcrypto.so.3 and libssl.so.3) opened with dlopen on first use, through our own
// declarations of the few functions accl calls (OpenSSL's C API is stable), so building needs no
// OpenSSL headers and a job that never encrypts never loads libssl. libcrypto serves the
// bootstrap's HMAC-SHA-256 and SHA-256; libssl the TLS 1.3 sessions of util/tls_session.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace accl {

// Opaque OpenSSL types.
struct OsslEvpMd;
struct OsslSslMethod;
struct OsslSslCtx;
struct OsslSsl;
struct OsslSession;
struct OsslCipher;
struct OsslBio;
struct OsslBioMethod;

struct CryptoLib {
  const OsslEvpMd* (*EVP_sha256)();
  unsigned char* (*HMAC)(const OsslEvpMd* md, const void* key, int keyLen, const unsigned char* data,
                         size_t bytes, unsigned char* out, unsigned int* outLen);
  unsigned char* (*SHA256)(const unsigned char* data, size_t bytes, unsigned char* out);
  unsigned long (*ERR_get_error)();
  void (*ERR_error_string_n)(unsigned long e, char* buf, size_t len);
  void (*ERR_clear_error)();
  void (*OPENSSL_cleanse)(void* p, size_t bytes);
  // A BIO of our own over the fd: its writes pass MSG_NOSIGNAL (a closed peer is EPIPE, never SIGPIPE).
  int (*BIO_get_new_index)();
  OsslBioMethod* (*BIO_meth_new)(int type, const char* name);
  int (*BIO_meth_set_write)(OsslBioMethod* m, int (*write)(OsslBio*, const char*, int));
  int (*BIO_meth_set_read)(OsslBioMethod* m, int (*read)(OsslBio*, char*, int));
  int (*BIO_meth_set_ctrl)(OsslBioMethod* m, long (*ctrl)(OsslBio*, int, long, void*));
  OsslBio* (*BIO_new)(const OsslBioMethod* m);
  void (*BIO_set_data)(OsslBio* b, void* data);
  void* (*BIO_get_data)(OsslBio* b);
  void (*BIO_set_init)(OsslBio* b, int init);
  void (*BIO_set_flags)(OsslBio* b, int flags);
  void (*BIO_clear_flags)(OsslBio* b, int flags);
};

using PskUseSessionCb = int (*)(OsslSsl* ssl, const OsslEvpMd* md, const unsigned char** id, size_t* idLen,
                                OsslSession** session);
using PskFindSessionCb = int (*)(OsslSsl* ssl, const unsigned char* id, size_t idLen, OsslSession** session);

struct SslLib {
  const OsslSslMethod* (*TLS_method)();
  OsslSslCtx* (*SSL_CTX_new)(const OsslSslMethod* method);
  void (*SSL_CTX_free)(OsslSslCtx* ctx);
  long (*SSL_CTX_ctrl)(OsslSslCtx* ctx, int cmd, long larg, void* parg);
  int (*SSL_CTX_set_ciphersuites)(OsslSslCtx* ctx, const char* list);
  int (*SSL_CTX_set_num_tickets)(OsslSslCtx* ctx, size_t n);
  uint64_t (*SSL_CTX_set_options)(OsslSslCtx* ctx, uint64_t options);
  void (*SSL_CTX_set_psk_use_session_callback)(OsslSslCtx* ctx, PskUseSessionCb cb);
  void (*SSL_CTX_set_psk_find_session_callback)(OsslSslCtx* ctx, PskFindSessionCb cb);
  int (*SSL_CTX_set_ex_data)(OsslSslCtx* ctx, int idx, void* data);
  void* (*SSL_CTX_get_ex_data)(const OsslSslCtx* ctx, int idx);
  OsslSslCtx* (*SSL_get_SSL_CTX)(const OsslSsl* ssl);
  OsslSession* (*SSL_SESSION_new)();
  void (*SSL_SESSION_free)(OsslSession* s);
  int (*SSL_SESSION_set1_master_key)(OsslSession* s, const unsigned char* key, size_t bytes);
  int (*SSL_SESSION_set_cipher)(OsslSession* s, const OsslCipher* cipher);
  int (*SSL_SESSION_set_protocol_version)(OsslSession* s, int version);
  const OsslCipher* (*SSL_CIPHER_find)(OsslSsl* ssl, const unsigned char* code);
  OsslSsl* (*SSL_new)(OsslSslCtx* ctx);
  void (*SSL_free)(OsslSsl* ssl);
  void (*SSL_set_bio)(OsslSsl* ssl, OsslBio* rbio, OsslBio* wbio);
  void (*SSL_set_connect_state)(OsslSsl* ssl);
  void (*SSL_set_accept_state)(OsslSsl* ssl);
  int (*SSL_do_handshake)(OsslSsl* ssl);
  int (*SSL_read)(OsslSsl* ssl, void* buf, int bytes);
  int (*SSL_write)(OsslSsl* ssl, const void* buf, int bytes);
  int (*SSL_get_error)(const OsslSsl* ssl, int ret);
  int (*SSL_pending)(const OsslSsl* ssl);
  int (*SSL_is_init_finished)(const OsslSsl* ssl);
  int (*SSL_shutdown)(OsslSsl* ssl);
};

// The constants of OpenSSL 3's ABI that accl uses.
namespace ossl {
constexpr int kTls13Version = 0x0304;
constexpr int kCtrlMode = 33;
constexpr int kCtrlSetMinProto = 123;
constexpr int kCtrlSetMaxProto = 124;
constexpr long kModePartialWrite = 0x1;
constexpr long kModeMovingWriteBuffer = 0x2;
constexpr uint64_t kOpIgnoreUnexpectedEof = 1ull << 7;
constexpr int kBioTypeSourceSink = 0x0400;
constexpr int kBioFlagRead = 0x01, kBioFlagWrite = 0x02, kBioFlagsRws = 0x07, kBioFlagShouldRetry = 0x08;
constexpr int kBioCtrlFlush = 11;
constexpr int kErrorNone = 0, kErrorSsl = 1, kErrorWantRead = 2, kErrorWantWrite = 3, kErrorSyscall = 5,
              kErrorZeroReturn = 6;
}  // namespace ossl

// The loaded library, or null with *why naming the file and dlerror() (why may be null).
// Loaded once per process; thread-safe.
const CryptoLib* cryptoLib(const char** why);
const SslLib* sslLib(const char** why);

// The text of OpenSSL's oldest queued error ("" if none); empties the queue.
void takeOpensslErrors(char* out, size_t bytes);

}  // namespace accl
