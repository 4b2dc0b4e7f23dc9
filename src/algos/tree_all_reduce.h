// Tree all-reduce: reduce up the tree to the root, then broadcast the result down. Across nodes
// the tree is one of the two trees of a double binary tree (each channel uses one); inside a
// node it is a chain.
//
// The schedule is two chunk loops, one per phase, each over its own Prims: treeReduceUp (`up`
// receives from the children and sends to the parent; its input is the user's sendbuff, a
// contribution) and treeBroadcastDown (`down` receives from the parent and sends to the
// children; its input is recvbuff, which already holds the result). Their types may differ (a
// GPU Prims sized for up to three children one way and one parent the other). An executor with
// one thread per channel runs the loops in turn (treeAllReduce: the broadcast starts after the
// last reduce chunk); one that can give each phase its own threads (the CUDA backend's warp
// groups, algos/coll_dispatch.h) runs them at once, so a node forwards results to its children
// while it still streams contributions to its parent. The root is the one node whose phases
// cannot be split that way — what it broadcasts is what its reduce writes — so there one Prims
// reduces each chunk and forwards it at once (treeRootReduceBroadcast).
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

// Calls step(at, elems) for each chunk of the channel's range, in order: the one chunk loop of
// the phases below.
template <class Step>
ACCL_HOST_DEVICE void forEachTreeChunk(const CollWork& work, Step&& step) {
  const size_t size = work.chanCount;
  for (size_t off = 0; off < size; off += work.chunkElems)
    step(work.chanOffset + off, minSize(work.chunkElems, size - off));
}

// The reduce phase at any node: contributions of the children (and of this rank) to the parent;
// at the root (or a single rank), the result into recvbuff.
template <class UpPrims>
ACCL_HOST_DEVICE void treeReduceUp(UpPrims& up, const TreeView& tree, const CollWork& work) {
  const bool hasParent = tree.up >= 0;
  const bool hasChildren = tree.nDown() > 0;
  forEachTreeChunk(work, [&](size_t at, size_t elems) {
    if (!hasChildren && !hasParent)
      up.localCopy(at, at, elems, /*postOp=*/true);
    else if (!hasChildren)
      up.send(at, elems);
    else if (hasParent)
      up.recvReduceSend(at, elems);
    else
      up.recvReduceCopy(at, at, elems, /*postOp=*/true);
  });
}

// The broadcast phase at any node: the result from the parent into recvbuff and on to the
// children; at the root, recvbuff to the children.
template <class DownPrims>
ACCL_HOST_DEVICE void treeBroadcastDown(DownPrims& down, const TreeView& tree, const CollWork& work) {
  const bool hasParent = tree.up >= 0;
  const bool hasChildren = tree.nDown() > 0;
  forEachTreeChunk(work, [&](size_t at, size_t elems) {
    if (!hasParent) {
      if (hasChildren) down.send(at, elems);
    } else if (hasChildren) {
      down.recvCopySend(at, elems);
    } else {
      down.recv(at, elems);
    }
  });
}

// The root with children, both phases in one pass: each chunk's contributions reduced with this
// rank's, the result stored to recvbuff and sent to the children in the same step. `prims`
// receives from and sends to the children. Same values, in the same reduction order, as
// treeReduceUp then treeBroadcastDown at the root.
template <class Prims>
ACCL_HOST_DEVICE void treeRootReduceBroadcast(Prims& prims, const CollWork& work) {
  forEachTreeChunk(work, [&](size_t at, size_t elems) {
    prims.recvReduceCopySend(at, at, elems, /*postOp=*/true);
  });
}

// Both phases in turn, on one set of threads.
template <class UpPrims, class DownPrims>
ACCL_HOST_DEVICE void treeAllReduce(UpPrims& up, DownPrims& down, const TreeView& tree, const CollWork& work) {
  treeReduceUp(up, tree, work);
  treeBroadcastDown(down, tree, work);
}

}  // namespace accl
