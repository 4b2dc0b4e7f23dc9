// Zero-copy sends of the network proxy (see net_user_send.h).
#include "transports/net/net_user_send.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "transports/net/net_conn.h"
#include "transports/net/net_context.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

size_t netUserSendMinBytes(const NetConnResources* r) {
  const NetProperties& props = r->ctx->properties();
  if (r->side != ConnSide::kSend || r->pinned || !(props.sendsUnregistered || (props.ptrSupport & kNetPtrHost)))
    return 0;
  const int64_t min = paramInt("ACCL_NET_ZERO_COPY_MIN");
  return min > 0 ? static_cast<size_t>(min) : 0;
}

bool netUserSendRegisteredOnly(const NetConnResources* r) { return !r->ctx->properties().sendsUnregistered; }

namespace {

// The end's device comm, which user buffers are registered with.
void* deviceComm(const NetConnResources* r) {
  return r->sendComm ? static_cast<void*>(r->sendComm) : static_cast<void*>(r->recvComm);
}

const char* toOrFrom(const NetConnResources* r) { return r->side == ConnSide::kSend ? "to" : "from"; }

}  // namespace

ncclResult_t netUserBufferHandle(NetConnResources* r, const UserBufferReg& reg, NetMemHandle** mh) {
  for (const NetConnResources::UserMr& m : r->userMrs)
    if (m.id == reg.id) {
      *mh = m.mhandle;
      return ncclSuccess;
    }
  const bool send = r->side == ConnSide::kSend;
  NetMemHandle* handle = nullptr;
  ncclResult_t res = r->net->regMr(deviceComm(r), const_cast<void*>(reg.base), reg.bytes, kNetPtrHost, &handle);
  if (res != ncclSuccess) {
    char what[160];
    snprintf(what, sizeof(what), "registering the user buffer %p (%zu bytes) with %s for a zero-copy %s", reg.base,
             reg.bytes, r->net->name(), send ? "send" : "receive");
    return r->failWith(res, what);
  }
  r->userMrs.push_back(NetConnResources::UserMr{reg.id, reg.base, reg.bytes, handle});
  ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: channel %d %s rank %d: registered user buffer %p (%zu bytes) with %s "
            "for zero-copy %s", r->rank, r->channel, toOrFrom(r), r->peerRank, reg.base, reg.bytes, r->net->name(),
            send ? "sends" : "receives");
  *mh = handle;
  return ncclSuccess;
}

void netReleaseUserMrs(NetConnResources* r, uint64_t id, const char* when) {
  void* comm = deviceComm(r);
  std::erase_if(r->userMrs, [&](const NetConnResources::UserMr& m) {
    if (id != 0 && m.id != id) return false;
    ncclResult_t res = comm ? r->net->deregMr(comm, m.mhandle) : ncclSuccess;  // no comm: gone with it
    ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: channel %d %s rank %d: released the registration of user buffer %p "
              "(%zu bytes) %s%s", r->rank, r->channel, toOrFrom(r), r->peerRank, m.base, m.bytes, when,
              res == ncclSuccess ? "" : " (the device reported an error)");
    return true;
  });
}

ncclResult_t netStepSource(NetConnResources* r, uint64_t s, uint32_t info, const void** src, NetMemHandle** mh) {
  const bool ll = (info & kFifoStepLL) != 0;
  *mh = r->mhandle;
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
  if (!r->userSendRegisteredOnly) return ncclSuccess;
  if (!desc.reg.covers(desc.data, bytes))
    return r->failWith(ncclInternalError, "a user-buffer step outside any registered buffer was published");
  return netUserBufferHandle(r, desc.reg, mh);
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
