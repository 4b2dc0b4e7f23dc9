// Compile-time check: our view of the device-API host functions (device_api_decls.h) redeclares
// NVIDIA's 2.32.3 ones exactly, and the structs and enums that cross the ABI have the layout and
// values recorded in device_api_layout.h / device_api_test.cc. Built only when NVIDIA's 2.32.3
// headers and the CUDA runtime headers were found; their directory is this object's only nccl
// include directory.
#include <cstddef>

#include ACCL_NVIDIA_NCCL_H
#include <nccl_device/core.h>
#include <nccl_device/gin_barrier.h>
#include <nccl_device/host.h>
#include <nccl_device/ll_a2a.h>
#include <nccl_device/lsa_barrier.h>

#include "device_api_decls.h"
#include "device_api_layout.h"

static_assert(sizeof(ncclTeam) == 12 && offsetof(ncclTeam, nRanks) == 0 && offsetof(ncclTeam, rank) == 4 &&
                  offsetof(ncclTeam, stride) == 8,
              "ncclTeam layout differs from {int nRanks, rank, stride}");
static_assert(sizeof(ncclMultimemHandle) == sizeof(void*) && offsetof(ncclMultimemHandle, mcBasePtr) == 0,
              "ncclMultimemHandle is not {void* mcBasePtr}");
static_assert(sizeof(ncclCftLeId) == 4, "ncclCftLeId is not 32 bits");
static_assert(NCCL_GIN_TYPE_NONE == 0 && NCCL_GIN_TYPE_PROXY == 2 && NCCL_GIN_TYPE_GDAKI == 3 &&
                  NCCL_GIN_TYPE_GPI == 4 && NCCL_GIN_TYPE_EFA_GDA == 5 && NCCL_GIN_MAX_TYPES == 6,
              "ncclGinType_t values");
static_assert(NCCL_GIN_CONNECTION_NONE == 0, "ncclGinConnectionType_t values");
static_assert(NCCL_CFT_TEAM_FLAT == 0 && NCCL_CFT_TEAM_HIER_MULTIMEM == 1 && NCCL_CFT_TEAM_HIER_LSA == 2,
              "ncclCftTeamMode_t values");

#define ACCL_PROPS_TYPE ncclCommProperties_t
ACCL_ASSERT_COMM_PROPERTIES_LAYOUT()

// The initializer a client uses: size, magic and version of this header.
namespace {
constexpr ncclCommProperties_t kInit = NCCL_COMM_PROPERTIES_INITIALIZER;
static_assert(kInit.size == ACCL_COMM_PROPERTIES_SIZE && kInit.magic == 0xcafebeefu && kInit.version == 23203,
              "NCCL_COMM_PROPERTIES_INITIALIZER");
}  // namespace

// Keeps the object non-empty.
int acclDeviceApiNvidiaCheckCompiled() { return 1; }
