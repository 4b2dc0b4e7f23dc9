// ncclSetEncryption (NCCL 2.32): encryption of the library's TCP traffic with a pre-shared key.
// accl has no TLS layer, so it accepts NCCL_ENCRYPTION_MODE_NONE (plaintext, what it always
// does) and refuses NCCL_ENCRYPTION_MODE_PSK with ncclInvalidUsage rather than pretend to
// encrypt. A config that was not made from NCCL_ENCRYPTION_CONFIG_INITIALIZER, or an unknown
// mode, is ncclInvalidArgument.
#include <cstddef>

#include "api/api_export.h"
#include "api/api_guard.h"

using namespace accl;

ACCL_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  return apiGuard("ncclSetEncryption", [&]() -> ncclResult_t {
    if (config == nullptr) return fail(ncclInvalidArgument, "ncclSetEncryption: config is NULL");
    if (config->magic != NCCL_API_MAGIC)
      return fail(ncclInvalidArgument,
                  "ncclSetEncryption: config->magic 0x%x is not NCCL_API_MAGIC; start from "
                  "NCCL_ENCRYPTION_CONFIG_INITIALIZER",
                  config->magic);
    // The struct exists since 2.32.0; `mode` must be inside the caller's struct.
    if (config->version < NCCL_VERSION(2, 32, 0))
      return fail(ncclInvalidArgument, "ncclSetEncryption: config->version %u is older than the struct (23200)",
                  config->version);
    if (config->size < offsetof(ncclEncryptionConfig_t, mode) + sizeof(int))
      return fail(ncclInvalidArgument, "ncclSetEncryption: config->size %zu is too small to hold mode", config->size);
    switch (config->mode) {
      case NCCL_ENCRYPTION_MODE_NONE:
        return ncclSuccess;
      case NCCL_ENCRYPTION_MODE_PSK:
        return fail(ncclInvalidUsage,
                    "ncclSetEncryption: NCCL_ENCRYPTION_MODE_PSK is not supported: accl has no TLS layer, its "
                    "sockets stay plaintext (only NCCL_ENCRYPTION_MODE_NONE is accepted)");
      default:
        return fail(ncclInvalidArgument, "ncclSetEncryption: mode %d is not an ncclEncryptionMode_t", config->mode);
    }
  });
}
