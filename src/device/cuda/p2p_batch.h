// Point-to-point batches on the CUDA Prims: every send and receive of one batch (the transfers
// of a group on one channel) progressed by one thread block without deadlock, several at once.
//
// The block's warps are cut into up to kP2pMaxGroups groups, each with its own pair of named
// barriers: the sends get some groups and the receives the others (in proportion to their
// numbers; a batch of one kind gives that kind every group), and each transfer one group —
// transfers that share a connection (two sends to one peer) the same one. So a send and a
// receive, and the transfers to and from several peers (an all-to-all), move at the same time,
// and a slow peer holds up only its own group. A group with one transfer builds its Prims once
// and keeps it for all the transfer's steps. A group with several (more transfers than groups)
// runs them in rounds: in round s, step s of each of its sends, then step s of each of its
// receives, a Prims built per step. One warp is one group: the whole batch in rounds, lock step;
// so is a batch of more than 64 transfers.
//
// Why no order of the batch deadlocks: a block that ran the transfers of a group one after the
// other could wait for ever — rank A's group waits in a receive for B's data while B's group
// waits in its own receive for A's, and neither reaches the send the other needs. With rounds,
// by induction on s: once every transfer on every rank has done its steps before s, every send
// step s proceeds (it waits only for the slot the peer freed at step s - kFifoSteps), as a group
// takes its sends of round s before its receives; then every receive step s proceeds (it waits
// for the peer's send of step s). A group with one transfer is the same argument with nothing
// else in its rounds. This holds for any send/recv pattern whose sends and receives match, in
// any listed order (the schedule of algos/send_recv.h: a transfer of n elements takes
// max(1, ceil(n / chunkElems)) steps, a 0-element transfer one empty step).
//
// Barriers: the groups use 1 .. 2 x kP2pMaxGroups, including a collective's 1 and 2 and a tree's
// 3 and 4. The whole block syncs first: the previous item's Simple data warps leave its last step
// with a bar.arrive on barrier 2, and that round completes only when its peer warps sync; a group
// that reused the id with its own thread count before then would join the old round (undefined
// on a GPU, a launch failure on the CPU harness). The batch ends with a whole-block vote (abort),
// which also makes every step a group wrote back to its connection (PrimsConn::step, where the
// next launch continues) visible to the next item.
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

// Warp groups of a batch at most: barrier pairs (1, 2) .. (13, 14); 15 stays free.
constexpr int kP2pMaxGroups = 7;

ACCL_HOST_DEVICE inline size_t p2pStepsOf(const CudaP2pTransfer& t) {
  return p2pStepCount(t.count, t.chunkElems);
}

// How a batch of nSend sends and nRecv receives is cut into groups on a block of `warps` warps:
// groups [0, sendGroups) take the sends, [sendGroups, groups) the receives.
struct P2pGroups {
  int groups = 1;
  int sendGroups = 1;

  ACCL_HOST_DEVICE static P2pGroups of(int nSend, int nRecv, int warps) {
    const int n = nSend + nRecv;
    P2pGroups g;
    int total = n < kP2pMaxGroups ? n : kP2pMaxGroups;
    total = total < warps ? total : warps;
    if (total < 2) return g;  // one group: the whole batch in rounds
    g.groups = total;
    if (nRecv == 0) {
      g.sendGroups = total;
    } else if (nSend == 0) {
      g.sendGroups = 0;
    } else {
      int s = (total * nSend + n / 2) / n;  // in proportion, each kind at least one group
      s = s < 1 ? 1 : s;
      s = s < nSend ? s : nSend;
      s = s < total - 1 ? s : total - 1;
      s = s > total - nRecv ? s : total - nRecv;  // no receive group without a receive
      g.sendGroups = s;
    }
    return g;
  }
  // The group of the kind-th transfer of its kind (counted in batch order; `key` is the kind
  // index of the first transfer of that kind on the same connection).
  ACCL_HOST_DEVICE int groupOf(bool isSend, int key) const {
    if (groups == 1) return 0;
    return isSend ? key % sendGroups : sendGroups + key % (groups - sendGroups);
  }
  // Group g's warps: [firstWarp(g), firstWarp(g + 1)).
  ACCL_HOST_DEVICE int firstWarp(int g, int warps) const { return g * warps / groups; }
};

// Runs steps [from, to) of transfer t on the warp group of `base`, with one Prims; false when a
// wait was aborted.
template <class T>
ACCL_SIMT_FN bool cudaP2pSteps(const CudaP2pTransfer& t, const CudaPrimsArgs& base, size_t from, size_t to) {
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
  for (size_t s = from; s < to && !prims.aborted(); ++s) {
    const size_t off = s * t.chunkElems;
    const size_t elems = t.count == 0 ? 0 : minSize(t.chunkElems, t.count - off);
    if (t.isSend) prims.send(t.offset + off, elems);
    else prims.recv(t.offset + off, elems);
  }
  return !prims.aborted();
}

// Runs transfers get(0) .. get(n - 1) (each a CudaP2pTransfer with a non-null conn). Every
// thread of the block calls it with the same arguments. Returns false (in every thread) when a
// wait was aborted.
template <class T, class Get>
ACCL_SIMT_FN bool cudaP2pBatch(int n, Get&& get, const uint32_t* abortFlag) {
  int nSend = 0;
  for (int i = 0; i < n; ++i) nSend += get(i).isSend ? 1 : 0;
  const int warps = simt::warpCount();
  // More than 64 transfers: one group (its transfers found by a bit each).
  const P2pGroups plan = n <= 64 ? P2pGroups::of(nSend, n - nSend, warps) : P2pGroups{};
  int group = 0;
  while (group + 1 < plan.groups && simt::warpIndex() >= plan.firstWarp(group + 1, warps)) ++group;

  // This group's transfers, a bit each: each kind's transfers dealt round the kind's groups in
  // batch order, a connection's later transfers following its first.
  uint64_t mineBits = 0;
  int mine = 0, last = 0;
  size_t steps = 0;
  for (int i = 0; i < n && plan.groups > 1; ++i) {
    const CudaP2pTransfer t = get(i);
    int kindIndex = 0, key = -1;
    for (int j = 0; j < i; ++j) {
      const CudaP2pTransfer o = get(j);
      if (o.isSend != t.isSend) continue;
      if (key < 0 && o.conn == t.conn) key = kindIndex;
      ++kindIndex;
    }
    if (plan.groupOf(t.isSend, key >= 0 ? key : kindIndex) != group) continue;
    mineBits |= uint64_t(1) << i;
    ++mine;
    last = i;
    const size_t s = p2pStepsOf(t);
    steps = s > steps ? s : steps;
  }
  CudaPrimsArgs base;
  base.abortFlag = abortFlag;
  base.barrierBase = 1 + 2 * group;
  bool ok = true;
  if (plan.groups > 1) {
    simt::syncBlock();  // see the header comment (Barriers)
    base.firstWarp = plan.firstWarp(group, warps);
    base.nWarps = plan.firstWarp(group + 1, warps) - base.firstWarp;
  } else {
    mine = n;
    for (int i = 0; i < n; ++i) {
      const size_t s = p2pStepsOf(get(i));
      steps = s > steps ? s : steps;
    }
  }
  if (mine == 1) {
    // The group's only transfer: one Prims for all its steps.
    const CudaP2pTransfer t = get(last);
    ok = cudaP2pSteps<T>(t, base, 0, p2pStepsOf(t));
  } else {
    // Rounds: step s of each send of the group, then of each receive.
    for (size_t s = 0; s < steps && ok; ++s) {
      for (int pass = 0; pass < 2 && ok; ++pass) {
        for (int i = 0; i < n && ok; ++i) {
          if (plan.groups > 1 && ((mineBits >> i) & 1u) == 0) continue;
          const CudaP2pTransfer t = get(i);
          if (t.isSend != (pass == 0) || s >= p2pStepsOf(t)) continue;
          ok = cudaP2pSteps<T>(t, base, s, s + 1);
        }
      }
    }
  }
  return !simt::syncBlockOr(!ok);
}

}  // namespace accl
