// NCCL's drive order for the devices that rely on it (see net_drive_order.h).
#include "transports/net/net_drive_order.h"

#include <string>

#include "transports/net/net_conn.h"
#include "util/check.h"
#include "util/params.h"

namespace accl {

ncclResult_t netTestsInOrder(const NetProperties& props, bool* inOrder) {
  const std::string order = paramStr("ACCL_NET_TEST_ORDER");
  if (order.empty() || order == "auto") {
    *inOrder = props.testInOrder;
  } else if (order == "oldest" || order == "any") {
    *inOrder = order == "oldest";
  } else {
    return fail(ncclInvalidArgument, "net transport: ACCL_NET_TEST_ORDER = '%s' is not auto, oldest or any",
                order.c_str());
  }
  return ncclSuccess;
}

bool netOlderRecvOutstanding(const NetConnResources* r) {
  for (uint64_t s = r->doneStep; s < r->postStep; ++s)
    if (r->steps[s % kFifoSteps].data) return true;
  return false;
}

}  // namespace accl
