// The built-in "Socket" network: NetDevice (transports/net/net_device.h) over TCP, one device per
// interface that NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY select. docs/net.md describes the wire
// protocol, the helper threads and the settings.
#pragma once

#include <memory>

#include "transports/net/net_device.h"

namespace accl {

// Finds the interfaces and returns a device serving them. No usable interface: ncclSystemError
// (with a WARN listing what the machine has) and *out left null.
ncclResult_t createSocketNetDevice(std::unique_ptr<NetDevice>* out);

}  // namespace accl
