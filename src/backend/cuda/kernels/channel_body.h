// What one block of the communicator kernel does for its channel: the channel's items of a
// launch (kernel_args.h) in order — a collective through the function table (dev_run.h), a batch
// of point-to-point transfers through cudaP2pBatch (device/cuda/p2p_batch.h: the transfers on
// their own warp groups at once, any send/recv pattern of a group completes). Every thread of the block
// runs this with the same arguments. Written against the device-primitives layer only: the
// kernel (kernel.cu) calls it under nvcc, tests/unit/cuda_kernel_body_test.cc on the CPU harness.
#pragma once

#include "device/common/chunk_loop.h"
#include "backend/cuda/kernels/dev_run.h"
#include "device/cuda/p2p_batch.h"

namespace accl {

// Items [first, last] are one batch of transfers, run by cudaP2pBatch (device/cuda/p2p_batch.h),
// which completes any matching pattern.
ACCL_SIMT_FN bool devRunP2pBatch(const DevWorkItem* items, int first, int last, const DevChannel& ch,
                                 const DevComm& comm) {
  for (int i = first; i <= last; ++i) {
    const DevWorkItem& it = items[i];
    const bool isSend = it.itemKind() == kDevItemSend;
    const int peer = it.rootOrPeer;
    PrimsConn* conn = peer >= 0 && peer < ch.nRanks ? (isSend ? ch.p2pSend : ch.p2pRecv)[peer] : nullptr;
    if (!conn) {
      devRaise(comm, kDevErrNoConnection, uint32_t(i));
      return false;
    }
  }
  auto get = [&](int k) {
    const DevWorkItem& it = items[first + k];
    CudaP2pTransfer t;
    t.isSend = it.itemKind() == kDevItemSend;
    t.conn = (t.isSend ? ch.p2pSend : ch.p2pRecv)[it.rootOrPeer];
    t.sendbuff = it.sendbuff;
    t.recvbuff = it.recvbuff;
    t.offset = it.chanOffset;
    t.count = it.chanCount;
    t.chunkElems = it.chunkElems > 0 ? it.chunkElems : 1;
    t.proto = static_cast<ProtoId>(devFuncKey(it.funcId).proto);
    return t;
  };
  return cudaP2pBatch<uint8_t>(last - first + 1, get, comm.abortFlag);
}

// Runs channel `c` of a launch whose header is `h` and items `items` (inline or spilled);
// `table` maps function ids to item functions. Stops at the first error (recorded in `comm`).
ACCL_SIMT_FN void devRunChannel(const KernelArgsHeader& h, const DevWorkItem* items, const DevComm& comm, int c,
                                DevFn const* table) {
  if (h.magic != kKernelArgsMagic || c >= h.nChannels || c >= kArgMaxChannels) {
    devRaise(comm, kDevErrBadArgs, h.magic);
    return;
  }
  const DevChannel& ch = comm.channels[c];
  const int first = h.channels[c].first;
  const int end = first + h.channels[c].count;
  uint64_t* const times = h.itemTimes;  // the same in every thread: the barrier below is uniform
  for (int i = first; i < end;) {
    const DevWorkItem cur = items[i];
    int last = i;
    if (cur.itemKind() != kDevItemColl)
      while (last + 1 < end && !(items[last].flags & kDevItemBatchEnd)) ++last;
    if (times && simt::threadIndex() == 0) {
      const uint64_t t = simt::globalTimerNs();
      for (int k = i; k <= last; ++k) times[2 * k] = t;
    }
    bool ok;
    if (cur.itemKind() == kDevItemColl) {
      const DevFn fn = cur.funcId < kDevNumFuncs ? table[cur.funcId] : nullptr;
      if (!fn) {
        devRaise(comm, kDevErrNoKernel, cur.funcId);
        return;
      }
      ok = fn(cur, ch, comm);
    } else {
      ok = devRunP2pBatch(items, i, last, ch, comm);
    }
    if (times) {
      simt::syncBlock();  // the end is when the last thread is done with the item
      if (ok && simt::threadIndex() == 0) {
        const uint64_t t = simt::globalTimerNs();
        for (int k = i; k <= last; ++k) times[2 * k + 1] = t;
      }
    }
    i = last + 1;
    if (!ok) {
      devRaise(comm, kDevErrAborted, uint32_t(i));
      return;
    }
  }
}

}  // namespace accl
