// Point-to-point: a send or a receive is a stream of chunks through one connection. The host
// executor interleaves the transfers of a group (see p2p progress in the backend), so these
// schedules describe a single transfer's steps.
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/work.h"

namespace accl {

template <class Prims>
ACCL_HOST_DEVICE void sendSchedule(Prims& prims, const P2pWork& work) {
  size_t off = 0;
  do {  // a zero-byte transfer still takes one step, so the receiver can match it
    const size_t elems = minSize(work.chunkElems, work.chanCount - off);
    prims.send(work.chanOffset + off, elems);
    off += elems;
  } while (off < work.chanCount);
}

template <class Prims>
ACCL_HOST_DEVICE void recvSchedule(Prims& prims, const P2pWork& work) {
  size_t off = 0;
  do {
    const size_t elems = minSize(work.chunkElems, work.chanCount - off);
    prims.recv(work.chanOffset + off, elems);
    off += elems;
  } while (off < work.chanCount);
}

}  // namespace accl
