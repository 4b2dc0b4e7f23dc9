// CommProfiler: one communicator's use of the profiler plugin — the context its init returned,
// the events it asked for, and the three event calls every layer makes (start, stop, record).
//
// Cost: a communicator without a plugin has no CommProfiler (its owner holds a null pointer), so
// each instrumented place costs one branch. With one, events are only built for the types the
// plugin asked for (wants()), and nothing here allocates per event: handles are the plugin's,
// kept by the caller in storage it already has (a plan item, a channel's locals, a step slot).
//
// Which events are started: those in the activation mask, and the ancestors of those (a KernelCh
// event needs its Coll, which needs its CollApi ...), as NCCL does, so every event a plugin
// receives has its parent. The kTree* masks below say which types make an event needed. A v7
// plugin asking for KernelPhase gets KernelCh too (effectiveMask), as in NCCL; accl itself
// emits no KernelPhase events (they belong to symmetric kernels, which accl does not have).
//
// Errors: init failing means no profiler for this communicator (a warning). Any other call that
// returns an error disables the plugin for this communicator with one warning; events not yet
// stopped are dropped, and finalize still runs at destroy. Calls may come from several threads
// at once (the API thread, channel workers, the network proxy), as in NCCL.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "profiler/profiler_plugin.h"

namespace accl::prof {

inline constexpr uint64_t kTreeBelowTask = kProxyOp | kProxyStep | kKernelCh | kKernelPhase | kNetPlugin;
inline constexpr uint64_t kTreeColl = kColl | kTreeBelowTask;
inline constexpr uint64_t kTreeP2p = kP2p | kTreeBelowTask;
inline constexpr uint64_t kTreeGroup = kGroup | kColl | kP2p | kTreeBelowTask;
inline constexpr uint64_t kTreeCollApi = kCollApi | kTreeColl;
inline constexpr uint64_t kTreeP2pApi = kP2pApi | kTreeP2p;
inline constexpr uint64_t kTreeGroupApi = kGroupApi | kCollApi | kP2pApi | kKernelLaunch | kTreeGroup;

class CommProfiler {
 public:
  // The profiler of a new communicator: null when no plugin is configured or loads, or its
  // init fails. `spec` is NCCL_PROFILER_PLUGIN's value, `maskSetting` NCCL_PROFILE_EVENT_MASK's
  // ("" = unset).
  static std::unique_ptr<CommProfiler> create(const std::string& spec, const std::string& maskSetting,
                                              const PluginCommInfo& info);
  ~CommProfiler();  // the plugin's finalize
  CommProfiler(const CommProfiler&) = delete;
  CommProfiler& operator=(const CommProfiler&) = delete;

  // Whether an event whose subtree is `tree` (one of kTree* or a single type) is needed.
  bool wants(uint64_t tree) const { return (mask_ & tree) != 0 && enabled_.load(std::memory_order_relaxed); }
  int rank() const { return info_.rank; }
  uint64_t mask() const { return mask_; }
  const ProfilerPlugin& plugin() const { return *plugin_; }

  // Starts an event (e.d.rank is filled in); its handle, or null when the plugin did not
  // record it (an older version, a disabled plugin).
  void* start(Event& e);
  void stop(void* handle);
  void record(void* handle, EventState state, const ProfStateArgsV5* args = nullptr);

 private:
  CommProfiler() = default;
  void disable(const char* call, ncclResult_t res);

  std::shared_ptr<const ProfilerPlugin> plugin_;
  void* ctx_ = nullptr;
  bool initialized_ = false;  // init succeeded: finalize is owed
  uint64_t mask_ = 0;
  std::atomic<bool> enabled_{true};
  std::string commName_;
  PluginCommInfo info_;
};

}  // namespace accl::prof
