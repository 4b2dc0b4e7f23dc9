// Compile-time check: our view of the device-API host functions (device_api_decls.h) redeclares
// NVIDIA's exactly. Built only when NVIDIA's 2.28.9 headers were found; their directory is the
// only nccl include directory of this object. Also checks struct ncclTeam's layout.
#include <cstddef>

#include ACCL_NVIDIA_NCCL_H
#include <nccl_device/core.h>
#include <nccl_device/gin_barrier.h>
#include <nccl_device/ll_a2a.h>
#include <nccl_device/lsa_barrier.h>

#include "device_api_decls.h"

static_assert(sizeof(ncclTeam) == 12 && offsetof(ncclTeam, nRanks) == 0 && offsetof(ncclTeam, rank) == 4 &&
                  offsetof(ncclTeam, stride) == 8,
              "ncclTeam layout differs from {int nRanks, rank, stride}");

// Keeps the object non-empty.
int acclDeviceApiNvidiaCheckCompiled() { return 1; }
