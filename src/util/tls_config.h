// The process's encryption setting (ncclSetEncryption, else ACCL_ENCRYPTION_PSK_FILE) and the
// TLS 1.3 contexts made from it. NCCL's setting is process-wide: connections opened after a call
// use the key it set; connections already open keep the context they were made with (a TlsContext
// lives as long as any session made from it). The key is copied, zeroed when replaced, never logged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nccl.h"
#include "util/openssl_lib.h"

namespace accl {

constexpr size_t kMinPskBytes = 32;  // NCCL 2.32's minimum length of config->psk

// Client and server contexts for TLS 1.3 with an external pre-shared key, no certificates,
// TLS_AES_128_GCM_SHA256.
class TlsContext {
 public:
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Builds both contexts from the key (its bytes, not a C string). Loads libssl.so.3.
  static ncclResult_t make(const char* psk, size_t bytes, std::shared_ptr<const TlsContext>* out);

  const SslLib& lib() const { return *lib_; }
  OsslSslCtx* client() const { return client_; }
  OsslSslCtx* server() const { return server_; }
  // The 32-byte key TLS uses (an HMAC of the user's key), for the PSK callbacks.
  const uint8_t* key() const { return key_; }

 private:
  TlsContext() = default;
  const SslLib* lib_ = nullptr;
  OsslSslCtx* client_ = nullptr;
  OsslSslCtx* server_ = nullptr;
  uint8_t key_[32] = {};
};

// ncclSetEncryption's effects: NONE forgets the key (plaintext from now on); PSK copies it and
// builds the contexts (a missing libssl is reported here, naming the library).
ncclResult_t setEncryptionNone();
ncclResult_t setEncryptionPsk(const char* psk, size_t bytes);

// The context new connections use; null for plaintext. The first call without a prior
// ncclSetEncryption reads ACCL_ENCRYPTION_PSK_FILE (an unreadable or short file is an error).
ncclResult_t currentTls(std::shared_ptr<const TlsContext>* out);

}  // namespace accl
