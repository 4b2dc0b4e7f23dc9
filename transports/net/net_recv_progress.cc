// The receiving end's proxy progress (see net_conn.h): it receives the header of the next step,
// then — once the step's slot is free (the receiver's Prims released the step kFifoSteps before:
// local head copy + kFifoSteps > step) — posts the receive of its bytes into the Simple slot or
// an LL bounce slot, and receives the next header. Steps complete in order: an LL step is copied
// into its LL slot with 8-byte atomic stores (no torn flag/data word), then tail = step + 1 is
// published locally, which the receiver's Prims waits on. A Simple step whose receiver asked for it
// to land in its own buffer goes there instead of the slot (net_landing.h).
#include <atomic>
#include <cstdio>
#include <cstring>

#include "device/common/fifo_signal.h"
#include "transports/net/net_conn.h"
#include "transports/net/net_drive_order.h"
#include "transports/net/net_landing.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {
namespace {

std::atomic_ref<uint64_t> counter(FifoCounter* c) { return std::atomic_ref<uint64_t>(c->value); }

// Copies `bytes` (whole LL words) from the bounce slot into the LL slot, word by word, atomically.
void landLL(NetConnResources* r, uint64_t s, size_t bytes) {
  const uint64_t* from = reinterpret_cast<const uint64_t*>(r->bounceSlot(s));
  uint64_t* to = reinterpret_cast<uint64_t*>(r->llSlot(s));
  for (size_t w = 0; w < bytes / sizeof(uint64_t); ++w)
    std::atomic_ref<uint64_t>(to[w]).store(from[w], std::memory_order_relaxed);
}

// Posts what the received header of step `s` asks for; false when the slot is still busy or the
// device cannot take the receive now.
ncclResult_t postPayload(NetConnResources* r, uint64_t s, bool* posted) {
  *posted = false;
  const NetStepHeader h = r->headers[s % kFifoSteps];
  const bool ll = (h.info & kFifoStepLL) != 0;
  const size_t bytes = h.info & ~kFifoStepLL;
  const size_t capacity = ll ? r->llSlotBytes() : r->layout.simpleSlotBytes;
  if (h.step != static_cast<uint32_t>(s) || bytes > capacity || (ll && bytes % sizeof(LLWord) != 0)) {
    char what[160];
    std::snprintf(what, sizeof(what), "step %llu: the header announces step %u with %zu %s bytes (slot: %zu)",
                  static_cast<unsigned long long>(s), h.step, bytes, ll ? "LL" : "Simple", capacity);
    return r->failWith(ncclRemoteError, what);
  }
  // The step slot's previous step must be complete (for a payload the Prims' release below
  // implies it; an empty step would otherwise take over a receive still in flight).
  if (r->doneStep + kFifoSteps <= s) return ncclSuccess;
  NetConnResources::Step& st = r->steps[s % kFifoSteps];
  if (bytes == 0) {
    st.hdr = st.data = nullptr;
    st.info = h.info;
    st.complete = true;
    st.landed = false;
    if (r->prof) netProfileStepBegin(r, s, 0);
    *posted = true;
    return ncclSuccess;
  }
  const uint64_t released = counter(r->head).load(std::memory_order_acquire);
  if (released + kFifoSteps <= s) return ncclSuccess;  // the Prims still read the slot
  void* profHandle = r->prof ? netProfileStepBegin(r, s, bytes) : nullptr;
  void* data = ll ? static_cast<void*>(r->bounceSlot(s)) : static_cast<void*>(r->simpleSlot(s));
  size_t size = capacity;
  NetMemHandle* mh = r->mhandle;
  // Straight into the user's buffer when the receiver already asked for this step there.
  bool landed = false;
  if (!ll) ACCL_CHECK(netClaimLanding(r, s, bytes, &landed, &data, &mh));
  if (landed) size = bytes;
  int tag = kNetDataTag;
  NetRequest* req = nullptr;
  ncclResult_t res = r->net->irecvProfiled(r->recvComm, 1, &data, &size, &tag, &mh,
                                           profHandle ? &profHandle : nullptr, &req);
  if (landed && (res != ncclSuccess || !req)) netUnclaimLanding(r, s);
  if (res != ncclSuccess) return r->failWith(res, "posting a step's receive");
  if (!req) return ncclSuccess;
  st.hdr = nullptr;
  st.data = req;
  st.info = h.info;
  st.complete = false;
  st.landed = landed;
  *posted = true;
  return ncclSuccess;
}

}  // namespace

ncclResult_t netRecvProgress(NetConnResources* r, bool* progressed) {
  if (r->failed) return ncclRemoteError;
  if (netLandingWithdrawn(r))  // its rank gave up a step that is landing in its buffer
    return r->failWith(ncclRemoteError, "its rank gave up waiting for a step landing in the user's buffer");
  // Headers and payload receives, in the order the sender sent them.
  for (int round = 0; round < kFifoSteps && !r->peerLeft; ++round) {
    const uint64_t s = r->postStep;
    if (!r->hdrReady && !r->hdrReq) {
      void* data = &r->headers[s % kFifoSteps];
      size_t size = sizeof(NetStepHeader);
      int tag = kNetHeaderTag;
      ncclResult_t res = r->net->irecv(r->recvComm, 1, &data, &size, &tag, &r->mhandle, &r->hdrReq);
      if (res != ncclSuccess) return r->failWith(res, "posting a step header's receive");
      if (!r->hdrReq) break;
      *progressed = true;
    }
    if (r->hdrReq) {
      if (r->testInOrder && netOlderRecvOutstanding(r)) break;  // the payloads before it go first
      int done = 0;
      size_t size = kNetSizeUnknown;
      ncclResult_t res = r->net->test(r->hdrReq, &done, &size);
      if (res != ncclSuccess) return r->failWith(res, "receiving a step header");
      if (!done) break;
      r->hdrReq = nullptr;
      if (size != kNetSizeUnknown && size != sizeof(NetStepHeader))
        return r->failWith(ncclRemoteError, "a step header of the wrong size arrived");
      *progressed = true;
      if (r->headers[s % kFifoSteps].info == kNetGoodbyeInfo) {
        r->peerLeft = true;  // nothing follows: post nothing more
        break;
      }
      r->hdrReady = true;
    }
    bool posted = false;
    ACCL_CHECK(postPayload(r, s, &posted));
    if (!posted) break;
    r->hdrReady = false;
    r->postStep++;
    *progressed = true;
  }
  // Completions, published in step order.
  while (r->doneStep < r->postStep) {
    const uint64_t s = r->doneStep;
    NetConnResources::Step& st = r->steps[s % kFifoSteps];
    if (!st.complete) {
      int done = 0;
      size_t size = kNetSizeUnknown;
      ncclResult_t res = r->net->test(st.data, &done, &size);
      if (res != ncclSuccess) return r->failWith(res, "receiving a step's data");
      if (!done) break;
      st.data = nullptr;
      const size_t bytes = st.info & ~kFifoStepLL;
      if (size != kNetSizeUnknown && size != bytes)
        return r->failWith(ncclRemoteError, "a step's data does not match its header's size");
      if (st.info & kFifoStepLL) landLL(r, s, bytes);
      if (st.landed) netLandingDone(r, s, bytes);
      st.complete = true;
    }
    r->doneStep++;
    FifoCounter* tail = r->tail();
    // With landings the receiver learns from the step info whether the bytes are in its buffer.
    if (r->landings)
      std::atomic_ref<uint32_t>(tail->stepInfo[s % kFifoSteps])
          .store(st.info | (st.landed ? kFifoStepLanded : 0u), std::memory_order_relaxed);
    counter(tail).store(r->doneStep, std::memory_order_seq_cst);
    wakeSleepers(tail->sleepers, tail->value);
    if (r->prof) netProfileStepDone(r, s);
    *progressed = true;
  }
  // An operation whose steps all landed before (or without) its receiver's marks ends here.
  if (r->prof) r->profOps->retire(*r->prof, r->doneStep);
  if (r->peerLeft && !r->closedLocally && r->doneStep == r->postStep) {
    // Like a local peer that closes: a Prims that waits for more learns it from `closed`.
    r->closedLocally = true;
    ACCL_INFO(ACCL_LOG_NET, "NET/proxy: rank %d: rank %d (host %s) closed its end of channel %d after step %llu",
              r->rank, r->peerRank, r->peerHost.c_str(), r->channel, static_cast<unsigned long long>(r->doneStep));
    r->closeCounters();
  }
  return ncclSuccess;
}

}  // namespace accl
