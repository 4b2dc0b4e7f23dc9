// Ring broadcast: the root's data flows along the ring, chunk by chunk (pipelined); every rank
// stores it and forwards it, except the rank just before the root, which only stores it.
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

template <class Prims>
ACCL_HOST_DEVICE void ringBroadcast(Prims& prims, const RingView& ring, const CollWork& work) {
  const int n = ring.nranks;
  const int me = ring.rankAt(ring.index);
  const int next = ring.rankAt(ring.index + 1);
  const size_t size = work.chanCount;
  for (size_t off = 0; off < size; off += work.chunkElems) {
    const size_t elems = minSize(work.chunkElems, size - off);
    const size_t at = work.chanOffset + off;
    if (me == work.root) {
      if (n == 1)
        prims.localCopy(at, at, elems, /*postOp=*/false);
      else
        prims.copySend(at, at, elems, /*postOp=*/false);
    } else if (next == work.root) {
      prims.recv(at, elems);
    } else {
      prims.recvCopySend(at, elems);
    }
  }
}

}  // namespace accl
