// CommProfiler: per-communicator init / finalize of the profiler plugin and its guarded event
// calls (see comm_profiler.h).
#include "profiler/comm_profiler.h"

#include <cstdlib>

#include "util/log.h"
#include "util/params.h"

namespace accl::prof {

std::unique_ptr<CommProfiler> CommProfiler::create(const std::string& spec, const std::string& maskSetting,
                                                   const PluginCommInfo& info) {
  std::shared_ptr<const ProfilerPlugin> plugin = ProfilerPlugin::acquire(spec);
  if (!plugin) return nullptr;
  std::unique_ptr<CommProfiler> p(new CommProfiler());
  p->plugin_ = std::move(plugin);
  p->commName_ = info.commName ? info.commName : "";
  p->info_ = info;
  p->info_.commName = p->commName_.c_str();
  int mask = 0;
  if (!maskSetting.empty()) {
    int64_t v = 0;
    if (parseParamInt(maskSetting.c_str(), &v) && v >= 0 && v <= INT32_MAX)
      mask = static_cast<int>(v);
    else
      ACCL_WARN("NCCL_PROFILE_EVENT_MASK=%s is not a non-negative integer; starting from 0", maskSetting.c_str());
  }
  void* ctx = nullptr;
  ncclResult_t res = p->plugin_->init(&ctx, p->info_, &mask);
  if (res != ncclSuccess) {
    ACCL_WARN("profiler plugin %s: init failed with error %d on rank %d; this communicator runs without it",
              p->plugin_->name(), static_cast<int>(res), info.rank);
    return nullptr;  // nothing to finalize
  }
  if (ctx == nullptr) {
    // Accepted without a context: the plugin declines this communicator (NVIDIA's Inspector when
    // it cannot start). NCCL then sends it neither events nor finalize; neither do we.
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_PROFILE, "profiler plugin %s: init on rank %d left no context; this "
              "communicator runs without it", p->plugin_->name(), info.rank);
    return nullptr;
  }
  p->ctx_ = ctx;
  p->initialized_ = true;
  p->mask_ = effectiveMask(p->plugin_->version(), mask);
  if ((p->mask_ & kKernelPhase) && !(static_cast<uint32_t>(mask) & kKernelCh))
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_PROFILE,
              "profiler plugin %s: KernelCh events enabled implicitly (KernelPhase asked for, which needs them)",
              p->plugin_->name());
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_PROFILE, "profiler plugin %s (v%d): rank %d event mask 0x%llx",
            p->plugin_->name(), p->plugin_->version(), info.rank, static_cast<unsigned long long>(p->mask_));
  return p;
}

CommProfiler::~CommProfiler() {
  if (!initialized_) return;
  ncclResult_t res = plugin_->finalize(ctx_);
  if (res != ncclSuccess)
    ACCL_INFO(ACCL_LOG_PROFILE, "profiler plugin %s: finalize returned error %d (ignored)", plugin_->name(),
              static_cast<int>(res));
}

void CommProfiler::disable(const char* call, ncclResult_t res) {
  if (enabled_.exchange(false))
    ACCL_WARN("profiler plugin %s: %s returned error %d on rank %d; profiling is off for this communicator",
              plugin_->name(), call, static_cast<int>(res), info_.rank);
}

void* CommProfiler::start(Event& e) {
  if (!enabled_.load(std::memory_order_relaxed)) return nullptr;
  e.d.rank = info_.rank;
  void* handle = nullptr;
  ncclResult_t res = plugin_->start(ctx_, &handle, e, info_);
  if (res != ncclSuccess) {
    disable("startEvent", res);
    return nullptr;
  }
  return handle;
}

void CommProfiler::stop(void* handle) {
  if (!handle || !enabled_.load(std::memory_order_relaxed)) return;
  ncclResult_t res = plugin_->stop(handle);
  if (res != ncclSuccess) disable("stopEvent", res);
}

void CommProfiler::record(void* handle, EventState state, const ProfStateArgsV5* args) {
  if (!handle || !enabled_.load(std::memory_order_relaxed)) return;
  ncclResult_t res = plugin_->record(handle, state, args);
  if (res != ncclSuccess) disable("recordEventState", res);
}

}  // namespace accl::prof
