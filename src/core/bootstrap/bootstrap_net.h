// The bootstrap's choice of network: which local address ranks and roots listen on (NCCL's
// NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY / NCCL_COMM_ID rules) and the parsed NCCL_COMM_ID.
#pragma once

#include <string>

#include "nccl.h"
#include "util/net_interfaces.h"
#include "util/socket_address.h"

namespace accl {

// The local address (port 0) bootstrap listeners bind to. Chosen from the machine's interfaces that
// readSocketIfSetting() allows, with selectInterfaces() (the NCCL_SOCKET_IFNAME list when set; else
// ib*, then NCCL_COMM_ID's subnet, then the usual fallbacks) and logged once per distinct setting.
// Fails with ncclInvalidUsage when NCCL_SOCKET_IFNAME/NCCL_SOCKET_FAMILY leave no usable interface.
ncclResult_t bootstrapNetAddress(SocketAddress* out);

// NCCL_COMM_ID: *isSet = false when unset; otherwise the parsed address (port must not be 0; a host
// name resolves in the family NCCL_SOCKET_FAMILY forces).
ncclResult_t commIdFromEnv(SocketAddress* out, bool* isSet);

}  // namespace accl
