// The host one-round all-reduce (see host_one_shot.h).
#include "backend/host/host_one_shot.h"

#include <cstring>
#include <vector>

#include "backend/host/host_backend.h"
#include "device/common/dtypes.h"
#include "device/common/reduce_buffers.h"
#include "util/check.h"

namespace accl {
namespace {

// Up to this many bytes per rank the vectors travel as LL steps: the receiver polls the data
// words themselves instead of the tail counter and then the slot, one cache-line transfer fewer
// on the critical path of a small call. Beyond, LL's doubled bytes cost more: measured once LL
// steps stopped copying word by word through libc, Simple is as fast at 256 B and faster from
// 512 B (2 ranks, 1 KiB: 0.91 against 1.07 us; 4 ranks, 4 KiB: 7.2 against 11.5; docs/latency.md).
constexpr size_t kOneShotLLMaxBytes = 256;

}  // namespace

ncclResult_t hostOneShotAllReduce(HostBackend& backend, int channel, const CollWork& w) {
  const int n = backend.view().facts().nRanks;
  const int me = backend.view().facts().rank;
  const size_t bytes = w.count * dtypeSize(w.type);
  if (bytes == 0) return ncclSuccess;  // every rank has the same count: nothing to exchange
  // Slot r of the scratch holds rank r's contribution (after that rank's preOp: a PreMulSum
  // scalar may differ per rank, so each rank scales its own vector before sending it); the last
  // slot is the accumulator, since the output may alias the input.
  std::vector<char>& scratch = backend.oneShotScratch();
  if (scratch.size() < bytes * (n + 1)) scratch.resize(bytes * (n + 1));
  auto slot = [&](int r) { return scratch.data() + bytes * static_cast<size_t>(r); };

  ACCL_CHECK(applyPreOp(slot(me), w.sendbuff, w.count, w.type, w.op));
  const bool ll = bytes <= kOneShotLLMaxBytes;
  const size_t chunkElems = ll ? backend.chunkElems(kProtoLL, dtypeSize(w.type)) : w.chunkElems;
  std::vector<P2pWork>& works = backend.oneShotWorks();
  works.clear();
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    for (bool isSend : {true, false}) {
      P2pWork p{};
      p.isSend = isSend;
      p.peer = r;
      p.proto = ll ? kProtoLL : kProtoSimple;
      p.type = w.type;
      p.sendbuff = slot(me);
      p.recvbuff = slot(r);
      p.chanOffset = 0;
      p.chanCount = w.count;
      p.chunkElems = chunkElems;
      works.push_back(p);
    }
  }
  backend.noteScratchBytes();
  ACCL_CHECK(backend.runP2pBatch(channel, works));

  // Reduce in rank order, so every rank gets bit-identical results.
  char* acc = slot(n);
  std::memcpy(acc, slot(0), bytes);
  for (int r = 1; r < n; ++r)
    ACCL_CHECK(reduceBuffers(acc, acc, slot(r), w.count, w.type, w.op, r == n - 1 ? kPostOp : kReducePlain));
  std::memcpy(w.recvbuff, acc, bytes);
  return ncclSuccess;
}

}  // namespace accl
