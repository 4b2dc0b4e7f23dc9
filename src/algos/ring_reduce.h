// Ring reduce: the partial result starts at the rank after the root and travels the ring,
// gaining one contribution per hop, until it reaches the root, which keeps it.
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

template <class Prims>
ACCL_HOST_DEVICE void ringReduce(Prims& prims, const RingView& ring, const CollWork& work) {
  const int n = ring.nranks;
  const int me = ring.rankAt(ring.index);
  const int prev = ring.rankAt(ring.index - 1);
  const size_t size = work.chanCount;
  for (size_t off = 0; off < size; off += work.chunkElems) {
    const size_t elems = minSize(work.chunkElems, size - off);
    const size_t at = work.chanOffset + off;
    if (n == 1)
      prims.localCopy(at, at, elems, /*postOp=*/true);
    else if (prev == work.root)
      prims.send(at, elems);
    else if (me == work.root)
      prims.recvReduceCopy(at, at, elems, /*postOp=*/true);
    else
      prims.recvReduceSend(at, elems);
  }
}

}  // namespace accl
