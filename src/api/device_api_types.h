// The types of NCCL's device API (NVIDIA's nccl_device/core.h and host.h) that accl's host entry
// points take or return. accl ships no nccl_device headers, so this header declares them itself:
// handles and requirement structs that we only receive by pointer stay incomplete; everything
// that crosses the ABI by value or is written by us (ncclTeam, ncclMultimemHandle,
// ncclCommProperties) has NVIDIA's exact layout, pinned by the static_asserts below (and checked
// against NVIDIA's headers by tests/abi/device_api_nvidia_check.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

struct ncclDevComm;
struct ncclDevCommRequirements;
struct ncclDevResourceRequirements;
struct ncclLsaBarrierHandle;
struct ncclGinBarrierHandle;
struct ncclLLA2AHandle;
struct ncclGinOutboxHandle;
struct ncclGinInboxA2AHandle;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

// A team is a strided subset of the world: member i (0 <= i < nRanks) is world rank
// base + i*stride, and `rank` is the caller's index in it.
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;

// A multicast (NVLS) mapping of a window, passed by value.
struct ncclMultimemHandle {
  void* mcBasePtr;
};
typedef struct ncclMultimemHandle ncclMultimemHandle_t;

// Identifier of a CFT (fabric) "LE" a device kernel addresses.
typedef uint32_t ncclCftLeId;

typedef enum {
  NCCL_GIN_CONNECTION_NONE,
  NCCL_GIN_CONNECTION_FULL,
  NCCL_GIN_CONNECTION_RAIL,
  NCCL_GIN_CONNECTION_CUSTOM_STRIDE,
} ncclGinConnectionType_t;

typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4,
  NCCL_GIN_TYPE_EFA_GDA = 5,
  NCCL_GIN_MAX_TYPES = 6,
} ncclGinType_t;

typedef enum {
  NCCL_CFT_TEAM_FLAT,
  NCCL_CFT_TEAM_HIER_MULTIMEM,
  NCCL_CFT_TEAM_HIER_LSA,
} ncclCftTeamMode_t;

// What ncclCommQueryProperties reports. The caller fills size/magic/version (the initializer
// of the header it was compiled with); the library writes the rest, up to `size` bytes.
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
  uint64_t commHash;
  int ginMinStride;
  ncclGinConnectionType_t ginConnectionType;
  bool ginSupport[64];  // [t]: GIN type t is usable
  size_t devCommRuntimeVersionSize;
  bool cftSupport;
  bool cftMulticastSupport;
  bool cftCountedSupport;
} ncclCommProperties_t;

static_assert(sizeof(ncclTeam) == 12 && offsetof(ncclTeam, stride) == 8, "ncclTeam layout");
static_assert(sizeof(ncclMultimemHandle) == sizeof(void*), "ncclMultimemHandle layout");
static_assert(sizeof(ncclGinType_t) == 4 && sizeof(ncclGinConnectionType_t) == 4, "GIN enums are int-sized");
static_assert(offsetof(ncclCommProperties_t, rank) == 16 && offsetof(ncclCommProperties_t, nvmlDev) == 28 &&
                  offsetof(ncclCommProperties_t, deviceApiSupport) == 32 &&
                  offsetof(ncclCommProperties_t, multimemSupport) == 33 &&
                  offsetof(ncclCommProperties_t, ginType) == 36 && offsetof(ncclCommProperties_t, nLsaTeams) == 40 &&
                  offsetof(ncclCommProperties_t, hostRmaSupport) == 44 &&
                  offsetof(ncclCommProperties_t, railedGinType) == 48 &&
                  offsetof(ncclCommProperties_t, commHash) == 56 &&
                  offsetof(ncclCommProperties_t, ginMinStride) == 64 &&
                  offsetof(ncclCommProperties_t, ginConnectionType) == 68 &&
                  offsetof(ncclCommProperties_t, ginSupport) == 72 &&
                  offsetof(ncclCommProperties_t, devCommRuntimeVersionSize) == 136 &&
                  offsetof(ncclCommProperties_t, cftSupport) == 144 &&
                  offsetof(ncclCommProperties_t, cftCountedSupport) == 146 && sizeof(ncclCommProperties_t) == 152,
              "ncclCommProperties_t layout differs from NCCL 2.32.3's");
