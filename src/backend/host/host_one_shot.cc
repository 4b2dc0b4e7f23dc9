// The host one-round all-reduce (see host_one_shot.h).
#include "backend/host/host_one_shot.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "backend/host/fifo_end.h"
#include "backend/host/host_backend.h"
#include "backend/host/host_wait.h"
#include "core/engine/connections.h"
#include "device/common/dtypes.h"
#include "device/common/reduce_buffers.h"
#include "util/check.h"

namespace accl {
namespace {

// Up to this many bytes per rank the vectors travel as LL steps: the receiver polls the data
// words themselves instead of the tail counter and then the slot. That saves a cache-line
// transfer only while the vector fits one or two LL lines; from 128 B a Simple step (one copy,
// one tail) is faster, since the steps are published without a full barrier (fifo_end.h): 2 ranks
// 128 B 0.20-0.21 us Simple against 0.23 LL, 256 B 0.48 against 0.73 with the machine's slow
// cross-core state; 32 B and less LL by 10-20 ns (docs/latency.md).
constexpr size_t kOneShotLLMaxBytes = 64;

// One transfer of the exchange: this rank's vector `own` to `peer`, or the peer's into `into`.
// Filled field by field in place: a temporary copied in was a store-forwarding stall per entry.
void setTransfer(P2pWork& p, bool isSend, int peer, const CollWork& w, bool ll, size_t chunkElems, const char* own,
                 char* into) {
  p.isSend = isSend;
  p.peer = peer;
  p.proto = ll ? kProtoLL : kProtoSimple;
  p.type = w.type;
  p.sendbuff = isSend ? own : nullptr;
  p.recvbuff = isSend ? nullptr : into;
  p.chanOffset = 0;
  p.chanCount = w.count;
  p.chunkElems = chunkElems;
}

// Two ranks, a vector that fits one step: the send and the receive as one exchange, without the
// general transfer loop (its transfer list, registration lookup and per-pass checks). The send
// goes out at once when its slot is free; the receive is polled here for the policy's spin, and
// a peer that has not answered by then is waited for by the general loop, which yields, sleeps and
// watches abort, timeout and liveness. Steps are published without a full barrier and the
// sleepers checked after one fence, as the general loop does (fifo_end.h). Returns false, having
// done nothing, where it does not apply (a network end, a full FIFO, a vector over one step).
bool exchangeWithPeer(HostBackend& backend, int channel, int peer, const CollWork& w, bool ll, size_t chunkElems,
                      const char* own, char* into, const char* what, ncclResult_t* res) {
  const size_t bytes = w.count * dtypeSize(w.type);
  Connection* sc = backend.view().connection(channel, peer, true);
  Connection* rc = backend.view().connection(channel, peer, false);
  if (!sc || !rc || sc->userSendMinBytes > 0 || w.count > chunkElems) return false;
  FifoView& sf = sc->view;
  FifoView& rf = rc->view;
  if (!sendSlotFree(sf)) return false;
  sendStepUnfenced(sf, own, bytes, ll);
  wakeIfSleeping(sf.tail);  // a sleeper that settled earlier; the fenced check follows
  const int spin = backend.waitPolicy().spinCount;
  for (int i = 0; i <= spin; ++i) {
    if (recvStepUnfenced(rf, bytes, into, ll)) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      wakeIfSleeping(sf.tail);
      wakeIfSleeping(rf.head);
      *res = ncclSuccess;
      return true;
    }
    cpuRelax();
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the send's sleepers check, before waiting
  wakeIfSleeping(sf.tail);
  std::vector<P2pWork>& works = backend.oneShotWorks();
  works.resize(1);
  setTransfer(works[0], false, peer, w, ll, chunkElems, own, into);
  *res = backend.runP2pBatch(channel, works, what);
  return true;
}

}  // namespace

ncclResult_t hostOneShotAllReduce(HostBackend& backend, int channel, const CollWork& w) {
  const int n = backend.view().facts().nRanks;
  const int me = backend.view().facts().rank;
  const size_t bytes = w.count * dtypeSize(w.type);
  if (bytes == 0) return ncclSuccess;  // every rank has the same count: nothing to exchange
  // Slot r of the scratch receives rank r's contribution (after that rank's preOp: a PreMulSum
  // scalar may differ per rank, so each rank scales its own vector before sending it). This
  // rank's own contribution is sent and reduced straight from the send buffer when nothing can
  // change it before it is read: no preOp to apply, and either two ranks (one reduction step,
  // which may write over its own input) or an output apart from the input. Otherwise slot `me`
  // holds a copy.
  std::vector<char>& scratch = backend.oneShotScratch();
  if (scratch.size() < bytes * n) scratch.resize(bytes * n);
  auto slot = [&](int r) { return scratch.data() + bytes * static_cast<size_t>(r); };
  const char* in = static_cast<const char*>(w.sendbuff);
  char* out = static_cast<char*>(w.recvbuff);
  const bool apart = in + bytes <= out || out + bytes <= in;
  const bool ownInPlace = w.op.kind != DevRedOpKind::kPreMulSum && (n == 2 || apart);
  if (!ownInPlace) ACCL_CHECK(applyPreOp(slot(me), w.sendbuff, w.count, w.type, w.op));
  const char* own = ownInPlace ? in : slot(me);
  auto contribution = [&](int r) -> const char* { return r == me ? own : slot(r); };

  const bool ll = bytes <= kOneShotLLMaxBytes;
  const size_t chunkElems = ll ? backend.chunkElems(kProtoLL, dtypeSize(w.type), 0) : w.chunkElems;
  const char* what = collApiName(w.func, "ncclAllReduce");
  ncclResult_t exchanged;
  if (n == 2 && exchangeWithPeer(backend, channel, 1 - me, w, ll, chunkElems, own, slot(1 - me), what, &exchanged)) {
    backend.noteScratchBytes();
    ACCL_CHECK(exchanged);
  } else {
    std::vector<P2pWork>& works = backend.oneShotWorks();
    works.resize(2 * static_cast<size_t>(n - 1));
    size_t i = 0;
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      for (bool isSend : {true, false}) setTransfer(works[i++], isSend, r, w, ll, chunkElems, own, slot(r));
    }
    backend.noteScratchBytes();
    ACCL_CHECK(backend.runP2pBatch(channel, works, what));
  }

  // Reduce in rank order, so every rank gets bit-identical results, straight into the output.
  if (n == 1) {
    std::memmove(out, own, bytes);
    return ncclSuccess;
  }
  for (int r = 1; r < n; ++r)
    ACCL_CHECK(reduceBuffers(out, r == 1 ? contribution(0) : out, contribution(r), w.count, w.type, w.op,
                             r == n - 1 ? kPostOp : kReducePlain));
  return ncclSuccess;
}

}  // namespace accl
