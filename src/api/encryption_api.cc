// ncclSetEncryption (NCCL 2.32): TLS 1.3 with a pre-shared key on every TCP connection accl makes
// between processes (util/tls_config.h holds the setting, util/tls_session.h the sessions).
// NCCL_ENCRYPTION_MODE_NONE: plaintext from now on. NCCL_ENCRYPTION_MODE_PSK: config->psk, a C
// string of at least 32 bytes, is copied (the caller may free it); libssl.so.3 is loaded now, and
// its absence is reported here. Connections opened after the call use the new setting. A config
// not made from NCCL_ENCRYPTION_CONFIG_INITIALIZER, an unknown mode or a missing/short key is
// ncclInvalidArgument. The key never appears in a message.
#include <cstddef>
#include <cstring>

#include "api/api_export.h"
#include "api/api_guard.h"
#include "util/tls_config.h"

using namespace accl;

ACCL_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  return apiGuard("ncclSetEncryption", [&]() -> ncclResult_t {
    if (config == nullptr) return fail(ncclInvalidArgument, "ncclSetEncryption: config is NULL");
    if (config->magic != NCCL_API_MAGIC)
      return fail(ncclInvalidArgument,
                  "ncclSetEncryption: config->magic 0x%x is not NCCL_API_MAGIC; start from "
                  "NCCL_ENCRYPTION_CONFIG_INITIALIZER",
                  config->magic);
    // The struct exists since 2.32.0; `mode` and `psk` must be inside the caller's struct.
    if (config->version < NCCL_VERSION(2, 32, 0))
      return fail(ncclInvalidArgument, "ncclSetEncryption: config->version %u is older than the struct (23200)",
                  config->version);
    if (config->size < offsetof(ncclEncryptionConfig_t, mode) + sizeof(int))
      return fail(ncclInvalidArgument, "ncclSetEncryption: config->size %zu is too small to hold mode", config->size);
    switch (config->mode) {
      case NCCL_ENCRYPTION_MODE_NONE:
        return setEncryptionNone();
      case NCCL_ENCRYPTION_MODE_PSK: {
        if (config->size < offsetof(ncclEncryptionConfig_t, psk) + sizeof(const char*))
          return fail(ncclInvalidArgument, "ncclSetEncryption: config->size %zu is too small to hold psk",
                      config->size);
        const char* psk = config->psk;
        if (psk == nullptr)
          return fail(ncclInvalidArgument, "ncclSetEncryption: NCCL_ENCRYPTION_MODE_PSK needs config->psk (a key "
                      "of at least %zu bytes)", kMinPskBytes);
        size_t len = strlen(psk);
        if (len < kMinPskBytes)
          return fail(ncclInvalidArgument, "ncclSetEncryption: config->psk has %zu bytes, at least %zu needed", len,
                      kMinPskBytes);
        return setEncryptionPsk(psk, len);
      }
      default:
        return fail(ncclInvalidArgument, "ncclSetEncryption: mode %d is not an ncclEncryptionMode_t", config->mode);
    }
  });
}
