// NCCL's drive order, for networks that rely on it (issue 20; docs/net.md "Drive order"). Many
// net plugins written for older NCCL complete a comm's requests in posting order and treat a test
// of any request but the comm's oldest outstanding one as an error: NCCL never tests otherwise,
// so they never had to cope. The receiving proxy interleaves step headers with payloads on one
// comm, so it keeps to that order explicitly on every device that declares the need
// (NetProperties::testInOrder: every external plugin) — and only there, since waiting for a
// payload before testing the next header costs the built-in devices their pipelining.
// ACCL_NET_TEST_ORDER overrides the choice: `oldest` on every device, `any` on none (accl's order
// before issue 20, for tests: a plugin that relies on the order then fails).
#pragma once

#include "nccl.h"
#include "transports/net/net_device.h"

namespace accl {

struct NetConnResources;

// Whether an end on this device tests its comm's requests oldest first (ACCL_NET_TEST_ORDER;
// auto follows props.testInOrder). A value other than auto / oldest / any: ncclInvalidArgument.
ncclResult_t netTestsInOrder(const NetProperties& props, bool* inOrder);

// Receiver: whether a payload receive posted before the header receive of step postStep is still
// outstanding; testing that header first would test a newer request before an older one.
bool netOlderRecvOutstanding(const NetConnResources* r);

}  // namespace accl
