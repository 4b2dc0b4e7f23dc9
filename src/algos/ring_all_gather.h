// Ring all-gather: every rank's block travels n-1 hops around the ring; each rank stores every
// block as it passes. Block of rank r lands at recvbuff + r * count.
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

template <class Prims>
ACCL_HOST_DEVICE void ringAllGather(Prims& prims, const RingView& ring, const CollWork& work) {
  const int n = ring.nranks;
  const size_t size = work.chanCount;
  for (size_t off = 0; off < size; off += work.chunkElems) {
    const size_t elems = minSize(work.chunkElems, size - off);
    const size_t in = work.chanOffset + off;  // within one rank's block
    auto outOf = [&](int rank) { return static_cast<size_t>(rank) * work.count + in; };
    const int me = ring.rankAt(ring.index);
    if (n == 1) {
      prims.localCopy(in, outOf(me), elems, /*postOp=*/false);
      continue;
    }
    // Step 0: my own block enters the ring (and my output).
    prims.copySend(in, outOf(me), elems, /*postOp=*/false);
    // Steps 1..n-2: blocks of the ranks behind me pass through.
    for (int j = 1; j < n - 1; ++j) prims.recvCopySend(outOf(ring.rankAt(ring.index - j)), elems);
    // Last: the block of the rank right after me has gone all the way round.
    prims.recv(outOf(ring.rankAt(ring.index + 1)), elems);
  }
}

}  // namespace accl
