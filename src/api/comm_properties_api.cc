// ncclCommQueryProperties (nccl_device/host.h, 2.28+): what a communicator offers to NCCL's
// device API. accl reports honest values for what it runs today: rank, size, device and hash of
// the communicator; no device API, no multimem (NVLS), no GIN of any type, no host RMA, no CFT.
// The whole communicator is one LSA team (accl's single-node view, as ncclTeamLsa says).
//
// The caller's struct comes from the NCCL_COMM_PROPERTIES_INITIALIZER of the header it was
// compiled with: magic must be NCCL_API_MAGIC (else ncclInvalidUsage, as NCCL answers), and only
// the first `size` bytes are written, so a struct from an older, smaller header stays intact.
#include <algorithm>
#include <cstring>

#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/device_api_types.h"
#include "core/comm/comm.h"

using namespace accl;

namespace accl {
namespace {

// The device API (and with it this struct) appeared in NCCL 2.28.0.
constexpr unsigned kFirstPropertiesVersion = NCCL_VERSION(2, 28, 0);

ncclCommProperties_t propertiesOf(const ncclComm& comm) {
  ncclCommProperties_t p;
  std::memset(&p, 0, sizeof(p));
  p.rank = comm.rank;
  p.nRanks = comm.nranks;
  p.cudaDev = comm.cudaDev;
  // NVML numbers physical GPUs; the host backend's device is only a label, so there is none.
  p.nvmlDev = comm.backend == Backend::Host ? -1 : comm.cudaDev;
  p.deviceApiSupport = false;
  p.multimemSupport = false;
  p.ginType = NCCL_GIN_TYPE_NONE;
  p.nLsaTeams = 1;
  p.hostRmaSupport = false;
  p.railedGinType = NCCL_GIN_TYPE_NONE;
  p.commHash = comm.commHash;
  p.ginMinStride = 0;
  p.ginConnectionType = NCCL_GIN_CONNECTION_NONE;
  // ginSupport[] stays all false.
  p.devCommRuntimeVersionSize = 0;  // no device communicator to size
  p.cftSupport = false;
  p.cftMulticastSupport = false;
  p.cftCountedSupport = false;
  return p;
}

}  // namespace
}  // namespace accl

ACCL_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props) {
  return apiGuard("ncclCommQueryProperties", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclCommQueryProperties", comm));
    if (props == nullptr) return fail(ncclInvalidArgument, "ncclCommQueryProperties: props is NULL");
    if (props->magic != NCCL_API_MAGIC)
      return fail(ncclInvalidUsage,
                  "ncclCommQueryProperties: props->magic 0x%x is not NCCL_API_MAGIC; start from "
                  "NCCL_COMM_PROPERTIES_INITIALIZER",
                  props->magic);
    if (props->version < kFirstPropertiesVersion)
      return fail(ncclInvalidArgument, "ncclCommQueryProperties: props->version %u predates the device API (%u)",
                  props->version, kFirstPropertiesVersion);
    const size_t header = offsetof(ncclCommProperties_t, rank);
    if (props->size < header)
      return fail(ncclInvalidArgument, "ncclCommQueryProperties: props->size %zu is smaller than its header (%zu)",
                  props->size, header);
    ncclCommProperties_t full = propertiesOf(*comm);
    size_t end = std::min(props->size, sizeof(full));
    std::memcpy(reinterpret_cast<char*>(props) + header, reinterpret_cast<const char*>(&full) + header, end - header);
    return ncclSuccess;
  });
}
