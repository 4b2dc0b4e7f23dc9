// ProfilerPlugin: an NCCL profiler plugin library (v1..v7 ABI, profiler/profiler_abi.h) loaded
// once per process and shared by every communicator, behind one version-neutral interface that
// speaks v7 descriptors; profiler_adapters.cc turns them into what an older plugin expects.
//
// Which library (NCCL_PROFILER_PLUGIN):
//   unset        libnccl-profiler.so if the dynamic loader finds it, silently nothing otherwise;
//   "none"       no plugin;
//   a path       (contains '/') that file;
//   a name       libnccl-profiler-<name>.so, else the name itself as a library file name.
// The newest of ncclProfiler_v7 ... _v1 the library exports is used. A library that is named but
// cannot be loaded, or exports no table, is one warning per process and no plugin: nothing
// else changes. (NCCL also looks for the symbols in the net plugin's library; accl does not.)
//
// Lifetime: acquire() hands out shared references; the library is unloaded when the last
// communicator using it has finalized its context. A failed load is remembered for the process
// (per setting), so it is neither retried nor logged again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nccl.h"
#include "profiler/profiler_abi.h"

namespace accl::prof {

// What init and the v1-v3 descriptors need to know of the communicator.
struct PluginCommInfo {
  uint64_t commId = 0;  // the communicator's hash (NCCL's commHash)
  const char* commName = "";
  int nNodes = 1;
  int nRanks = 1;
  int rank = 0;
};

// One event as accl's layers describe it: the v7 descriptor (the call's userProfilerTag in its
// userTag fields) plus what only v1 plugins want as numbers (v1 names func, datatype, algorithm
// and protocol by index).
struct Event {
  ProfDescrV7 d{};
  uint8_t funcIndex = 0;   // ncclFunc_t
  uint8_t typeIndex = 0;   // ncclDataType_t
  uint8_t algoIndex = 0;   // NCCL_ALGO_*
  uint8_t protoIndex = 0;  // NCCL_PROTO_*
  uint32_t op = 0;         // ncclRedOp_t
  size_t trafficBytes = 0;
};

class ProfilerPlugin {
 public:
  ~ProfilerPlugin();  // unloads the library
  ProfilerPlugin(const ProfilerPlugin&) = delete;
  ProfilerPlugin& operator=(const ProfilerPlugin&) = delete;

  // The plugin NCCL_PROFILER_PLUGIN names (spec: its value, "" = unset), or null.
  static std::shared_ptr<const ProfilerPlugin> acquire(const std::string& spec);

  int version() const { return version_; }
  const char* name() const { return name_.c_str(); }
  const std::string& path() const { return path_; }

  // The five calls, in v7 terms. start() leaves *handle null for an event this version does
  // not know (a v4 plugin and a CollApi event): the caller treats that as "not recorded".
  ncclResult_t init(void** ctx, const PluginCommInfo& comm, int* mask) const;
  ncclResult_t start(void* ctx, void** handle, const Event& e, const PluginCommInfo& comm) const;
  ncclResult_t stop(void* handle) const;
  ncclResult_t record(void* handle, EventState state, const ProfStateArgsV5* args) const;
  ncclResult_t finalize(void* ctx) const;

 private:
  ProfilerPlugin() = default;
  void* handle_ = nullptr;
  int version_ = 0;
  const void* table_ = nullptr;  // ProfilerV<version_>
  std::string name_;
  std::string path_;
};

// The logger handed to v4+ plugins: their lines go through accl's log.
LogFn logFn();

// The event types a plugin of `version` can receive (older versions know fewer).
uint64_t eventsKnownTo(int version);

// The activation mask accl works with, from what a plugin of `version` returned from init: the
// types it knows, and (v7) KernelCh with KernelPhase, which NCCL adds because a phase hangs from
// its channel's KernelCh event.
uint64_t effectiveMask(int version, int maskFromInit);

}  // namespace accl::prof
