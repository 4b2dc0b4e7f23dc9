// NetContext: the network state of one communicator — the NetDevice it talks through (created on
// the first net connection, by chooseNetDevice: NCCL_NET / ncclConfig_t.netName) and its proxy
// thread (net_proxy.h). It is the net transport's TransportCommState (transports/transport.h):
// the transport's commInit hook makes it from plain values, the connection table keeps it without
// knowing what it is and hands it to every net connection's setup in ConnSetup::state, and the
// hooks below are all that core reaches it through.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"
#include "transports/net/net_device.h"
#include "transports/net/net_proxy.h"
#include "transports/net/net_registry.h"
#include "transports/transport.h"

namespace accl {

class NetContext : public TransportCommState {
 public:
  // `choice`: which network (name, communicator hash, traffic class); `rank`: for messages.
  NetContext(const NetChoice& choice, int rank);
  // Stops the proxy; the connections (which close their comms on the device) are freed before.
  ~NetContext() override;
  NetContext(const NetContext&) = delete;
  NetContext& operator=(const NetContext&) = delete;

  // The communicator's network, created on first use (thread-safe). Device index: dev().
  ncclResult_t device(NetDevice** out);
  // The NIC every connection of this communicator uses: the one the matcher picks among the
  // network's devices when it lists more than one (the NIC closest to the rank in the topology,
  // core/engine/engine_tuner.cc), else — and without a matcher — the first one. Valid after device().
  int dev() const { return dev_.load(std::memory_order_acquire); }
  // Its properties (after a successful device()).
  const NetProperties& properties() const { return props_; }
  // Returns an index into the devices' properties, or -1 for device 0. Set before the first device().
  using DeviceMatcher = std::function<int(const std::vector<NetProperties>&)>;
  void setDeviceMatcher(DeviceMatcher matcher) { matcher_ = std::move(matcher); }
  const NetChoice& choice() const { return choice_; }
  int rank() const { return rank_; }

  // Where a connection that fails outside a close reports it (proxy thread; set from
  // TransportCommInit::linkLost, which core routes to liveness, naming the peer in every rank's
  // error). Unset: nowhere.
  using FailureHook = std::function<void(int peerRank, const std::string& detail)>;
  void setFailureHook(FailureHook hook) { failureHook_ = std::move(hook); }
  void reportFailure(int peerRank, const std::string& detail) const {
    if (failureHook_) failureHook_(peerRank, detail);
  }

  // The communicator's profiler plugin context, for the proxy's ProxyOp / ProxyStep events
  // (null: none; it outlives this context).
  prof::CommProfiler* profiler() const { return profiler_; }
  void setProfiler(prof::CommProfiler* p) {
    profiler_ = p;
    proxy_.setProfiler(p);
  }

  NetProxy& proxy() { return proxy_; }
  // Before the connections go: lets the proxy send what the senders' Prims already published (an
  // operation is complete for its sender once its last step is in the staging FIFO), unless the
  // peer takes nothing for kDrainStallMs or kDrainMaxMs passed; then stops the proxy thread
  // (joined; it restarts on the next connection's add).
  void drainAndStopProxy();
  // ncclCommDeregister took back registration `id`: every sender end releases the device
  // registration it made of that buffer for zero-copy sends (net_user_send.h), if any.
  void bufferDeregistered(uint64_t id);
  static constexpr int64_t kDrainStallMs = 300;
  static constexpr int64_t kDrainMaxMs = 2000;

 private:
  int matchDevice();  // the matcher's pick, 0 when it has none (mutex_ held)

  NetChoice choice_;
  int rank_;
  std::mutex mutex_;
  std::unique_ptr<NetDevice> device_;
  ncclResult_t deviceResult_ = ncclSuccess;  // a failed creation is not retried
  bool tried_ = false;
  std::atomic<int> dev_{0};
  NetProperties props_;
  DeviceMatcher matcher_;
  FailureHook failureHook_;
  prof::CommProfiler* profiler_ = nullptr;
  NetProxy proxy_;  // declared after the device: stopped before the device goes away
};

// The net transport's per-communicator hooks (Transport::commInit, drain, setNicPicker, nicInfo):
// a NetContext made from the communicator's plain values, drainAndStopProxy, the device matcher,
// and the properties of the device in use.
std::unique_ptr<TransportCommState> netCommInit(const TransportCommInit& init);
void netCommDrain(TransportCommState* state);
void netBufferDeregistered(TransportCommState* state, uint64_t id);
void netSetNicPicker(TransportCommState* state, TransportNicPicker picker);
ncclResult_t netNicInfo(TransportCommState* state, TransportNic* out);

}  // namespace accl
