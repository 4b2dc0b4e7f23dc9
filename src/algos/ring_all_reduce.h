// Ring all-reduce: a reduce-scatter around the ring followed by an all-gather around the ring.
// Each loop iteration covers nranks blocks of up to one chunk each; block b ends up fully
// reduced on the rank at ring position b, which then circulates it.
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

template <class Prims>
ACCL_HOST_DEVICE void ringAllReduce(Prims& prims, const RingView& ring, const CollWork& work) {
  const int n = ring.nranks;
  const size_t size = work.chanCount;
  const size_t base = work.chanOffset;
  if (n == 1) {
    for (size_t off = 0; off < size; off += work.chunkElems)
      prims.localCopy(base + off, base + off, minSize(work.chunkElems, size - off), /*postOp=*/true);
    return;
  }
  const size_t loop = static_cast<size_t>(n) * work.chunkElems;
  for (size_t grid = 0; grid < size; grid += loop) {
    const size_t remaining = size - grid;
    const size_t chunk = minSize(work.chunkElems, divUp(remaining, n));
    auto offsetOf = [&](int block) { return base + grid + chunk * static_cast<size_t>(block); };
    auto elemsOf = [&](int block) { return blockElems(remaining, chunk, block); };
    auto blockAt = [&](int stepsBack) { return ((ring.index - stepsBack) % n + n) % n; };

    // Step 0: push my contribution to block (index-1) to the next rank.
    int b = blockAt(1);
    prims.send(offsetOf(b), elemsOf(b));
    // Steps 1..n-2: add my contribution to the partial sum passing through.
    for (int j = 2; j < n; ++j) {
      b = blockAt(j);
      prims.recvReduceSend(offsetOf(b), elemsOf(b));
    }
    // Step n-1: my own block is now complete; keep it and start circulating it.
    b = blockAt(0);
    prims.recvReduceCopySend(offsetOf(b), offsetOf(b), elemsOf(b), /*postOp=*/true);
    // Steps n..2n-3: store and forward the completed blocks of the others.
    for (int j = 1; j < n - 1; ++j) {
      b = blockAt(j);
      prims.recvCopySend(offsetOf(b), elemsOf(b));
    }
    // Last step: the block completed by the next rank arrives; nobody needs it after me.
    b = blockAt(n - 1);
    prims.recv(offsetOf(b), elemsOf(b));
  }
}

}  // namespace accl
