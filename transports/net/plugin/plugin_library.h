// PluginLibrary: one external NCCL net plugin (`libnccl-net*.so`) loaded into the process. It is
// opened once per process and shared, refcounted, by every NetDevice made from it: the last
// user's release unloads it (as NCCL does). It owns the choice of ABI version (the newest
// `ncclNetPlugin_v12` .. `_v6` symbol the library exports) and the init rules of that version:
// v11+ plugins are initialized per communicator (a context each, finalized on release); older
// ones once, when the first communicator attaches.
//
// Naming (NCCL_NET_PLUGIN, a comma list; each entry tried in turn by the registry):
//   unset          -> "libnccl-net.so" (its absence is normal: INFO only)
//   "none" or ""   -> no plugin
//   "name"         -> dlopen("name"), then "libnccl-net-name.so"
//   "/path/x.so"   -> that file only (as is any entry containing '/', or "lib*.so")
//   "STATIC_PLUGIN" -> the plugin linked into the program itself (its exported symbols), as NCCL
// Problems with an entry the user named are WARN lines; the registry then moves on.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"
#include "transports/net/plugin/plugin_calls.h"

namespace accl::netplugin {

// The entries NCCL_NET_PLUGIN asks for, in order: {""} (the default library) when unset, none
// for "none" or an empty value.
std::vector<std::string> pluginEntries();
// The same for a given value (tests); isSet=false means "unset".
std::vector<std::string> pluginEntriesFor(const std::string& value, bool isSet);

class PluginLibrary {
 public:
  // The library for one entry ("" = the default libnccl-net.so), already loaded or loaded now;
  // null, after a log line saying why, when it cannot be opened or exports no usable table.
  static std::shared_ptr<PluginLibrary> load(const std::string& entry);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& file() const { return file_; }  // the name dlopen accepted
  const std::string& name() const { return name_; }  // the plugin's network name
  int version() const { return calls_->version(); }
  bool namedByUser() const { return namedByUser_; }  // false for the default library
  PluginCalls& calls() { return *calls_; }

  // One communicator starts using the plugin: v11+ gets init(ctx, commId, trafficClass); older
  // versions are initialized by the first attach only. Then counts the devices. On failure
  // nothing needs undoing (a v11+ context already made is finalized here).
  ncclResult_t attach(uint64_t commId, int trafficClass, void** ctx, int* deviceCount);
  // The communicator is done: v11+ finalize(ctx).
  void detach(void* ctx);

 private:
  PluginLibrary() = default;

  void* handle_ = nullptr;
  std::string file_;
  std::string name_;
  bool namedByUser_ = false;
  std::unique_ptr<PluginCalls> calls_;
  std::mutex initMutex_;
  bool initialized_ = false;  // pre-v11: the one process-wide init succeeded
};

// The logger handed to plugins: their lines go through accl's log.
void pluginLog(int level, unsigned long subsys, const char* file, int line, const char* fmt, ...);

}  // namespace accl::netplugin
