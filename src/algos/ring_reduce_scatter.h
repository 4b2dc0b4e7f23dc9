// Ring reduce-scatter: the partial sum of rank r's block starts at the rank after r and gathers
// one contribution per hop; after n-1 hops it reaches r complete. Input block of rank r is
// sendbuff + r * count; the result is recvbuff (count elements).
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

template <class Prims>
ACCL_HOST_DEVICE void ringReduceScatter(Prims& prims, const RingView& ring, const CollWork& work) {
  const int n = ring.nranks;
  const size_t size = work.chanCount;
  for (size_t off = 0; off < size; off += work.chunkElems) {
    const size_t elems = minSize(work.chunkElems, size - off);
    const size_t out = work.chanOffset + off;
    auto inOf = [&](int rank) { return static_cast<size_t>(rank) * work.count + out; };
    const int me = ring.rankAt(ring.index);
    if (n == 1) {
      prims.localCopy(inOf(me), out, elems, /*postOp=*/true);
      continue;
    }
    // Step 0: start the partial sum of the block owned by the rank before me.
    prims.send(inOf(ring.rankAt(ring.index - 1)), elems);
    // Steps 1..n-2: add my contribution to the blocks passing through.
    for (int j = 2; j < n; ++j) prims.recvReduceSend(inOf(ring.rankAt(ring.index - j)), elems);
    // Last: my own block arrives with everyone else's contribution.
    prims.recvReduceCopy(inOf(me), out, elems, /*postOp=*/true);
  }
}

}  // namespace accl
