// The built-in "IB" network: NetDevice (transports/net/net_device.h) over InfiniBand / RoCE verbs,
// with libibverbs loaded at run time (ACCL_IBVERBS_LIB; transports/net/ib/ibverbs_table.h). One
// device per active port that NCCL_IB_HCA selects. docs/net_ib.md describes the protocol and the
// settings.
#pragma once

#include <memory>

#include "transports/net/net_device.h"

namespace accl {

// Always succeeds with a device: when the verbs library is missing, NCCL_IB_DISABLE is set, no
// IP interface exists for the connection side channel, or no port is active, the network has
// zero devices and an INFO line (NET subsystem) says why.
ncclResult_t createIbNetDevice(std::unique_ptr<NetDevice>* out);

}  // namespace accl
