// Zero-copy sends of the network proxy (see net_user_send.h).
#include "transports/net/net_user_send.h"

#include <atomic>
#include <cstring>

#include "transports/net/net_conn.h"
#include "transports/net/net_context.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

size_t netUserSendMinBytes(const NetConnResources* r) {
  if (r->side != ConnSide::kSend || r->pinned || !r->ctx->properties().sendsUnregistered) return 0;
  const int64_t min = paramInt("ACCL_NET_ZERO_COPY_MIN");
  return min > 0 ? static_cast<size_t>(min) : 0;
}

ncclResult_t netStepSource(NetConnResources* r, uint64_t s, uint32_t info, const void** src) {
  const bool ll = (info & kFifoStepLL) != 0;
  if (!(info & kFifoStepUserPtr)) {
    *src = ll ? r->llSlot(s) : r->simpleSlot(s);
    return ncclSuccess;
  }
  const size_t bytes = info & ~(kFifoStepLL | kFifoStepUserPtr);
  if (ll || r->userSendMinBytes == 0 || bytes < r->userSendMinBytes)
    return r->failWith(ncclInternalError, "a user-buffer step was published where the end takes none");
  // The rank gave up this connection after an error (UserSends::abandon): the user's buffer may
  // be gone, so nothing more is read from it.
  if (std::atomic_ref<uint32_t>(r->tail()->closed).load(std::memory_order_acquire))
    return r->failWith(ncclRemoteError, "the rank abandoned its user-buffer sends");
  FifoUserSend desc;
  std::memcpy(&desc, r->simpleSlot(s), sizeof(desc));
  *src = desc.data;
  return ncclSuccess;
}

void netCountUserSend(NetConnResources* r, uint64_t s, uint32_t info) {
  if (!(info & kFifoStepUserPtr)) return;
  const size_t bytes = info & ~(kFifoStepLL | kFifoStepUserPtr);
  if (r->userSteps++ == 0)
    ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: channel %d to rank %d: step %llu (%zu bytes) goes straight from the "
              "user's buffer (zero copy)", r->rank, r->channel, r->peerRank, static_cast<unsigned long long>(s), bytes);
  r->userBytes += bytes;
}

uint32_t netWireInfo(uint32_t info) { return info & ~kFifoStepUserPtr; }

void netLogUserSends(const NetConnResources* r) {
  if (r->userSteps == 0) return;
  ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: channel %d to rank %d: %llu steps (%llu bytes) sent straight from user "
            "buffers", r->rank, r->channel, r->peerRank, static_cast<unsigned long long>(r->userSteps),
            static_cast<unsigned long long>(r->userBytes));
}

}  // namespace accl
