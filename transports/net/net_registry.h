// The net registry: which network (NetDevice) a communicator uses. Candidates in order, as in
// NCCL: the external plugins NCCL_NET_PLUGIN names (transports/net/plugin/plugin_library.h;
// by default libnccl-net.so when present), then the built-in "IB", then "Socket". The first
// candidate that initializes and reports at least one device wins; a broken or missing plugin
// is logged and skipped. A network name (ncclConfig_t.netName, which NCCL_NET overrides — see
// core/comm/config.cc) restricts the choice to the candidate of that name, compared without regard to
// case ("Socket", "IB", or a plugin's own name); when it is not usable here the result is
// ncclInvalidUsage with a message listing what is.
//
// Each call makes a new NetDevice for one communicator: nothing is shared between
// communicators except the loaded plugin libraries, which are refcounted and locked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "transports/net/net_device.h"

namespace accl {

struct NetChoice {
  std::string netName;    // "" = the first usable network
  uint64_t commId = 0;    // the communicator's hash: v11+ plugins key their context by it
  int trafficClass = -1;  // ncclConfig_t.trafficClass; -1 = undefined
};

using NetDeviceFactory = ncclResult_t (*)(std::unique_ptr<NetDevice>* out);
struct BuiltinNet {
  const char* name;  // as NCCL_NET spells it
  NetDeviceFactory create;
};

// The built-in networks in order of preference: IB, then Socket.
const std::vector<BuiltinNet>& builtinNets();

// Picks and creates the network for one communicator (plugins per NCCL_NET_PLUGIN, then the
// built-ins).
ncclResult_t chooseNetDevice(const NetChoice& choice, std::unique_ptr<NetDevice>* out);

// The same over explicit candidates: plugin entries as NCCL_NET_PLUGIN would list them ("" = the
// default library) and built-ins. For tests, and for callers that already parsed the setting.
ncclResult_t chooseNetDeviceFrom(const NetChoice& choice, const std::vector<std::string>& pluginEntries,
                                 const std::vector<BuiltinNet>& builtins, std::unique_ptr<NetDevice>* out);

}  // namespace accl
