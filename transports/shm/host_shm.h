// Host shm transport (processes of one kernel and one PID namespace): its blob, for the
// transport itself and for tests that forge blobs.
#pragma once

#include <cstddef>

#include "transports/conn_region.h"
#include "transports/transport.h"

namespace accl {

// The payload of an shm blob.
struct ShmBlob {
  RegionRef region;  // first, as every mapped-region blob (transports/mapped_ends.h)
  char path[64];     // where the peer opens the region: /proc/<owner pid>/fd/<fd>
};
static_assert(offsetof(ShmBlob, region) == 0, "mapped-region blobs start with their RegionRef");

}  // namespace accl
