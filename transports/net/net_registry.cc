// The net registry (see net_registry.h): plugins, then IB, then Socket; NCCL_NET / netName
// picks one by name.
#include "transports/net/net_registry.h"

#include <strings.h>

#include "transports/net/ib/ib_net.h"
#include "transports/net/plugin/plugin_library.h"
#include "transports/net/plugin/plugin_net_device.h"
#include "transports/net/socket/socket_net.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {
namespace {

using netplugin::PluginLibrary;
using netplugin::PluginNetDevice;

// One candidate's fate, for the message when nothing fits.
struct Seen {
  std::string name;
  std::string status;  // "1 device", "no devices", "init failed: ..."
};

std::string devicesText(int n) { return n == 1 ? "1 device" : std::to_string(n) + " devices"; }

bool sameName(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// Attaches this communicator to a loaded plugin. Usable: *out set. Else logged and *out null.
// Either way *seen says what happened.
void tryPlugin(const std::shared_ptr<PluginLibrary>& library, const NetChoice& choice, std::unique_ptr<NetDevice>* out,
               Seen* seen) {
  seen->name = library->name();
  std::unique_ptr<PluginNetDevice> device;
  ncclResult_t res = PluginNetDevice::create(library, choice.commId, choice.trafficClass, &device);
  const bool named = library->namedByUser();
  if (res != ncclSuccess) {
    seen->status = std::string("init failed: ") + ncclGetErrorString(res);
    if (named)
      ACCL_WARN("NET/Plugin: net plugin %s (%s) failed to initialize (%s); trying the next network",
                library->name().c_str(), library->file().c_str(), ncclGetErrorString(res));
    else
      ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET/Plugin: net plugin %s failed to initialize (%s)",
                library->name().c_str(), ncclGetErrorString(res));
    return;
  }
  if (device->deviceCount() <= 0) {
    seen->status = "no devices";
    if (named)
      ACCL_WARN("NET/Plugin: net plugin %s (%s) reports no devices; trying the next network", library->name().c_str(),
                library->file().c_str());
    else
      ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET/Plugin: net plugin %s reports no devices", library->name().c_str());
    return;
  }
  seen->status = devicesText(device->deviceCount()) + ", " + library->file() + ", ncclNetPlugin_v" +
                 std::to_string(device->pluginVersion());
  *out = std::move(device);
}

void tryBuiltin(const BuiltinNet& builtin, std::unique_ptr<NetDevice>* out, Seen* seen) {
  seen->name = builtin.name;
  std::unique_ptr<NetDevice> device;
  ncclResult_t res = builtin.create(&device);
  if (res != ncclSuccess || !device) {
    seen->status = std::string("unavailable: ") + ncclGetErrorString(res != ncclSuccess ? res : ncclSystemError);
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET: %s is %s", builtin.name, seen->status.c_str());
    return;
  }
  if (device->deviceCount() <= 0) {
    seen->status = "no devices";
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET: %s has no devices", builtin.name);
    return;
  }
  seen->status = devicesText(device->deviceCount());
  *out = std::move(device);
}

ncclResult_t chosen(const Seen& seen) {
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET: using network %s (%s)", seen.name.c_str(), seen.status.c_str());
  return ncclSuccess;
}

std::string listSeen(const std::vector<Seen>& seen) {
  std::string text;
  for (const Seen& s : seen) text += (text.empty() ? "" : ", ") + s.name + " (" + s.status + ")";
  return text.empty() ? "none" : text;
}

}  // namespace

const std::vector<BuiltinNet>& builtinNets() {
  static const std::vector<BuiltinNet> nets = {
      {"IB", createIbNetDevice},
      {"Socket", createSocketNetDevice},
  };
  return nets;
}

ncclResult_t chooseNetDevice(const NetChoice& choice, std::unique_ptr<NetDevice>* out) {
  return chooseNetDeviceFrom(choice, netplugin::pluginEntries(), builtinNets(), out);
}

ncclResult_t chooseNetDeviceFrom(const NetChoice& choice, const std::vector<std::string>& pluginEntries,
                                 const std::vector<BuiltinNet>& builtins, std::unique_ptr<NetDevice>* out) {
  out->reset();
  const bool byName = !choice.netName.empty();
  if (byName) ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET: network '%s' requested", choice.netName.c_str());

  std::vector<Seen> seen;
  // Loaded plugins whose name did not match: surveyed only if nothing fits, for the message.
  std::vector<std::shared_ptr<PluginLibrary>> otherPlugins;
  std::vector<const BuiltinNet*> otherBuiltins;

  for (const std::string& entry : pluginEntries) {
    std::shared_ptr<PluginLibrary> library = PluginLibrary::load(entry);
    if (!library) {
      seen.push_back({entry.empty() ? "libnccl-net.so" : entry, "not loaded"});
      continue;
    }
    if (byName && !sameName(choice.netName, library->name().c_str())) {
      otherPlugins.push_back(library);
      continue;
    }
    seen.emplace_back();
    tryPlugin(library, choice, out, &seen.back());
    if (*out) return chosen(seen.back());
  }
  for (const BuiltinNet& builtin : builtins) {
    if (byName && !sameName(choice.netName, builtin.name)) {
      otherBuiltins.push_back(&builtin);
      continue;
    }
    seen.emplace_back();
    tryBuiltin(builtin, out, &seen.back());
    if (*out) return chosen(seen.back());
  }

  if (!byName) return fail(ncclInvalidUsage, "NET: no usable network: %s", listSeen(seen).c_str());
  // Say what the user could have asked for instead.
  for (const auto& library : otherPlugins) {
    std::unique_ptr<NetDevice> probe;
    seen.emplace_back();
    tryPlugin(library, choice, &probe, &seen.back());
  }
  for (const BuiltinNet* builtin : otherBuiltins) {
    std::unique_ptr<NetDevice> probe;
    seen.emplace_back();
    tryBuiltin(*builtin, &probe, &seen.back());
  }
  return fail(ncclInvalidUsage,
              "NET: NCCL_NET / ncclConfig_t.netName = '%s' names no usable network here; networks seen: %s",
              choice.netName.c_str(), listSeen(seen).c_str());
}

}  // namespace accl
