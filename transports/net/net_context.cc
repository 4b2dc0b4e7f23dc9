// A communicator's network state (see net_context.h).
#include "transports/net/net_context.h"

#include <atomic>

#include "transports/net/net_conn.h"
#include "transports/net/net_user_send.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {

NetContext::NetContext(const NetChoice& choice, int rank) : choice_(choice), rank_(rank) {}

NetContext::~NetContext() { proxy_.stop(); }

void NetContext::drainAndStopProxy() {
  // Each sender sends what is published, then its goodbye (net_conn.h).
  auto busy = [](ConnEnd* end) {
    auto* r = static_cast<NetConnResources*>(end->resources.get());
    if (!r || !r->mem || r->side != ConnSide::kSend || r->failed) return false;
    r->closing = true;
    return !r->byeDone;
  };
  auto progress = [](ConnEnd* end) { return static_cast<const NetConnResources*>(end->resources.get())->doneStep; };
  if (!proxy_.drain(busy, progress, kDrainStallMs, kDrainMaxMs))
    ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: closing with steps the peer did not take", rank_);
  proxy_.stop();
}

void NetContext::bufferDeregistered(uint64_t id) {
  proxy_.forEachEnd([id](ConnEnd* end) {
    auto* r = static_cast<NetConnResources*>(end->resources.get());
    if (r && !r->userMrs.empty()) netReleaseUserMrs(r, id, "at ncclCommDeregister");
  });
}

int NetContext::matchDevice() {
  std::vector<NetProperties> all(device_->deviceCount());
  for (int d = 0; d < static_cast<int>(all.size()); ++d)
    if (device_->getProperties(d, &all[d]) != ncclSuccess) return 0;
  int d = matcher_(all);
  return d >= 0 && d < static_cast<int>(all.size()) ? d : 0;
}

namespace {

// A network device as the tuner sees it.
TransportNic nicOf(const NetProperties& p) { return TransportNic{p.name, p.pciPath, p.speedMbps, p.latencyUs}; }

}  // namespace

std::unique_ptr<TransportCommState> netCommInit(const TransportCommInit& init) {
  auto ctx = std::make_unique<NetContext>(NetChoice{init.netName, init.commHash, init.trafficClass}, init.rank);
  if (init.linkLost) ctx->setFailureHook(init.linkLost);
  ctx->setProfiler(init.profiler);
  return ctx;
}

void netCommDrain(TransportCommState* state) { static_cast<NetContext*>(state)->drainAndStopProxy(); }

void netBufferDeregistered(TransportCommState* state, uint64_t id) {
  static_cast<NetContext*>(state)->bufferDeregistered(id);
}

void netSetNicPicker(TransportCommState* state, TransportNicPicker picker) {
  auto matcher = [picker = std::move(picker)](const std::vector<NetProperties>& all) {
    std::vector<TransportNic> nics;
    nics.reserve(all.size());
    for (const NetProperties& p : all) nics.push_back(nicOf(p));
    return picker(nics);
  };
  static_cast<NetContext*>(state)->setDeviceMatcher(std::move(matcher));
}

ncclResult_t netNicInfo(TransportCommState* state, TransportNic* out) {
  auto* ctx = static_cast<NetContext*>(state);
  NetDevice* device = nullptr;
  const ncclResult_t rc = ctx->device(&device);  // device() has said why it failed
  if (rc != ncclSuccess) return rc;
  *out = nicOf(ctx->properties());
  return ncclSuccess;
}

ncclResult_t NetContext::device(NetDevice** out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tried_) {
    tried_ = true;
    deviceResult_ = chooseNetDevice(choice_, &device_);
    if (deviceResult_ == ncclSuccess && device_ && matcher_ && device_->deviceCount() > 1) dev_ = matchDevice();
    if (deviceResult_ == ncclSuccess && (!device_ || device_->deviceCount() <= dev())) {
      deviceResult_ = fail(ncclSystemError, "rank %d: network %s has no device %d", rank_,
                           device_ ? device_->name() : "(none)", dev());
      device_.reset();
    }
    if (deviceResult_ == ncclSuccess) {
      NetProperties& props = props_;
      if (device_->getProperties(dev(), &props) == ncclSuccess) {
        ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET: rank %d uses network %s, device %d (%s, %d Mb/s)", rank_,
                  device_->name(), dev(), props.name.c_str(), props.speedMbps);
        ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET/%s : using device %d %s (%d Mbps, pci %s) for rank %d",
                  device_->name(), dev(), props.name.c_str(), props.speedMbps,
                  props.pciPath.empty() ? "unknown" : props.pciPath.c_str(), rank_);
      }
    }
  }
  if (deviceResult_ != ncclSuccess)
    return fail(deviceResult_, "rank %d: no network is usable for connections to other hosts (NCCL_NET \"%s\")",
                rank_, choice_.netName.c_str());
  *out = device_.get();
  return ncclSuccess;
}

}  // namespace accl
