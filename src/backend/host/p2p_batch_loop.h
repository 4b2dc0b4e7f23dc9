// Point-to-point transfers on the host backend. The transfers of one group batch progress
// together, one chunk at a time, without ever blocking on a single peer: a rank may send to and
// receive from any set of peers in one group, in any order, and still complete. (The CUDA
// backend gets the same effect by giving each peer its own warps; the step sequence of each
// transfer is the one of src/algos/send_recv.h.)
#pragma once

#include <vector>

#include "backend/host/p2p_batch_context.h"
#include "device/common/work.h"
#include "nccl.h"

namespace accl {

ncclResult_t hostRunP2pBatch(const HostP2pContext& ctx, int channel, const std::vector<P2pWork>& works);

}  // namespace accl
