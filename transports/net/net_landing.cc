// Zero-copy receives of the network proxy (see net_landing.h).
#include "transports/net/net_landing.h"

#include <atomic>

#include "device/common/fifo.h"
#include "transports/net/net_conn.h"
#include "transports/net/net_context.h"
#include "transports/net/net_user_send.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

std::atomic_ref<uint64_t> landingState(FifoLanding& l) { return std::atomic_ref<uint64_t>(l.state); }

}  // namespace

size_t netLandMinBytes(const NetConnResources* r) {
  const NetProperties& props = r->ctx->properties();
  if (r->side != ConnSide::kRecv || r->pinned || !(props.sendsUnregistered || (props.ptrSupport & kNetPtrHost)))
    return 0;
  if (paramInt("ACCL_NET_ZERO_COPY_RECV") == 0) return 0;
  const int64_t min = paramInt("ACCL_NET_ZERO_COPY_MIN");
  return min > 0 ? static_cast<size_t>(min) : 0;
}

ncclResult_t netClaimLanding(NetConnResources* r, uint64_t s, size_t bytes, bool* claimed, void** data,
                             NetMemHandle** mh) {
  *claimed = false;
  if (!r->landings || bytes < r->landMinBytes) return ncclSuccess;
  FifoLanding& l = r->landings[s % kFifoSteps];
  uint64_t expected = s + 1;
  if (landingState(l).load(std::memory_order_acquire) != expected || l.bytes != bytes) return ncclSuccess;
  NetMemHandle* handle = r->mhandle;
  if (r->landRegisteredOnly) {
    if (!l.reg.covers(l.data, bytes)) return ncclSuccess;  // not a registered buffer: the slot
    ACCL_CHECK(netUserBufferHandle(r, l.reg, &handle));
  }
  if (!landingState(l).compare_exchange_strong(expected, expected | FifoLanding::kLandingClaimed,
                                               std::memory_order_acq_rel))
    return ncclSuccess;  // the receiver took it back
  *data = l.data;
  *mh = handle;
  *claimed = true;
  r->claimedLandings++;
  return ncclSuccess;
}

void netUnclaimLanding(NetConnResources* r, uint64_t s) {
  FifoLanding& l = r->landings[s % kFifoSteps];
  uint64_t expected = (s + 1) | FifoLanding::kLandingClaimed;
  // Withdrawn meanwhile: nothing was posted, so the receiver may have it back at once.
  if (!landingState(l).compare_exchange_strong(expected, s + 1, std::memory_order_acq_rel))
    landingState(l).store(0, std::memory_order_release);
  r->claimedLandings--;
}

void netLandingDone(NetConnResources* r, uint64_t s, size_t bytes) {
  landingState(r->landings[s % kFifoSteps]).store(0, std::memory_order_release);
  r->claimedLandings--;
  if (r->landedSteps++ == 0)
    ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: channel %d from rank %d: step %llu (%zu bytes) landed straight in the "
              "user's buffer (zero copy)", r->rank, r->channel, r->peerRank, static_cast<unsigned long long>(s), bytes);
  r->landedBytes += bytes;
}

bool netLandingWithdrawn(const NetConnResources* r) {
  if (r->claimedLandings == 0) return false;
  for (int i = 0; i < kFifoSteps; ++i)
    if (std::atomic_ref<uint64_t>(r->landings[i].state).load(std::memory_order_acquire) &
        FifoLanding::kLandingWithdrawn)
      return true;
  return false;
}

void netStopLandings(NetConnResources* r) {
  if (!r->landings || r->claimedLandings == 0) return;
  // The device may be writing into a user buffer: take its registrations back (IB: the peer's
  // RDMA writes then fail), then close its receive side.
  netReleaseUserMrs(r, 0, "as the connection fails");
  if (r->recvComm) {
    if (r->mhandle) r->net->deregMr(r->recvComm, r->mhandle);
    r->mhandle = nullptr;
    r->net->closeRecv(r->recvComm);
    r->recvComm = nullptr;
  }
  for (int i = 0; i < kFifoSteps; ++i) {
    auto state = landingState(r->landings[i]);
    if (state.load(std::memory_order_acquire) & FifoLanding::kLandingClaimed) state.store(0, std::memory_order_release);
  }
  r->claimedLandings = 0;
}

void netLogLandings(const NetConnResources* r) {
  if (r->landedSteps == 0) return;
  ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: channel %d from rank %d: %llu steps (%llu bytes) received straight into "
            "user buffers", r->rank, r->channel, r->peerRank, static_cast<unsigned long long>(r->landedSteps),
            static_cast<unsigned long long>(r->landedBytes));
}

}  // namespace accl
