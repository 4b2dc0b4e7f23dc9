// Point-to-point batches on the CUDA Prims: every send and receive of one batch (the transfers
// of a group on one channel) progressed by one thread block without deadlock.
//
// A block that ran a batch's transfers one step each in batch order could deadlock: rank A's
// block waits for B's data in a receive step while B's block waits for A's data in its own
// receive step, and neither reaches the send step the other needs. So each FIFO step runs in two
// passes on the whole block: first every send's step, then every receive's (the schedule of
// algos/send_recv.h: a transfer of n elements takes max(1, ceil(n / chunkElems)) steps, a
// 0-element transfer one empty step). A send step waits only for a slot the peer freed at an
// earlier step, and a receive for a send the peer posts before its own receives, so the batch
// completes for any send/recv pattern whose sends and receives match, in any listed order.
// (Separate warp groups per kind would overlap sends and receives; they hung when a launch mixed
// collectives and transfers on the CPU harness, and wait for a GPU to be looked at again.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/chunk_loop.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"

namespace accl {

// One transfer of a batch, in element units of the batch's type (bytes for the kernels' copy).
struct CudaP2pTransfer {
  PrimsConn* conn = nullptr;    // the connection to (send) or from (recv) the peer
  bool isSend = false;
  const void* sendbuff = nullptr;  // send: the source buffer
  void* recvbuff = nullptr;        // recv: the destination buffer
  size_t offset = 0;               // first element of the transfer in its buffer
  size_t count = 0;
  size_t chunkElems = 1;           // elements one FIFO step carries (>= 1)
  ProtoId proto = kProtoSimple;
};

// Named barriers of the two groups (0 is __syncthreads; a collective's Prims use 1 and 2, and a
// tree's broadcast-phase group 3 and 4: never while a batch runs, as a block runs its items in turn).
constexpr int kP2pSendBarrierBase = 3;
constexpr int kP2pRecvBarrierBase = 5;

ACCL_HOST_DEVICE inline size_t p2pStepsOf(const CudaP2pTransfer& t) {
  return t.count == 0 ? 1 : (t.count + t.chunkElems - 1) / t.chunkElems;
}

// Runs transfers get(0) .. get(n - 1) (each a CudaP2pTransfer with a non-null conn). Every
// thread of the block calls it with the same arguments. Returns false (in every thread) when a
// wait was aborted.
template <class T, class Get>
ACCL_SIMT_FN bool cudaP2pBatch(int n, Get&& get, const uint32_t* abortFlag) {
  size_t steps = 0;
  for (int i = 0; i < n; ++i) {
    const size_t s = p2pStepsOf(get(i));
    steps = s > steps ? s : steps;
  }
  CudaPrimsArgs base;
  base.abortFlag = abortFlag;
  base.barrierBase = kP2pSendBarrierBase;
  bool ok = true;
  // Step s: first every send's step s, then every receive's. A send waits only for the slot the
  // peer freed at its step s - kFifoSteps; a receive waits for the peer's send of step s, which
  // the peer posts before any of its own receives of step s. So every wait leads back to an
  // earlier step, whatever order the batch lists its transfers in.
  for (size_t s = 0; s < steps && ok; ++s) {
    for (int pass = 0; pass < 2 && ok; ++pass) {
      const bool sends = pass == 0;
      for (int i = 0; i < n && ok; ++i) {
        const CudaP2pTransfer t = get(i);
        if (t.isSend != sends || s >= p2pStepsOf(t)) continue;
        CudaPrimsArgs a = base;
        a.proto = t.proto;
        a.input = t.sendbuff;
        a.output = t.recvbuff;
        if (t.isSend) {
          a.send[0] = t.conn;
          a.nSend = 1;
        } else {
          a.recv[0] = t.conn;
          a.nRecv = 1;
        }
        CudaPrims<T, RedSum<T>, 1, 1> prims(a, RedSum<T>{});
        const size_t off = s * t.chunkElems;
        const size_t elems = t.count == 0 ? 0 : minSize(t.chunkElems, t.count - off);
        if (t.isSend) prims.send(t.offset + off, elems);
        else prims.recv(t.offset + off, elems);
        ok = !prims.aborted();
      }
    }
  }
  return !simt::syncBlockOr(!ok);
}

}  // namespace accl
