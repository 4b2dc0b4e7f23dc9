// Tree all-reduce: reduce up the tree to the root, then broadcast the result down. Each phase
// streams its chunks through the FIFOs; the broadcast starts after the last reduce chunk (the
// phases do not overlap yet: that needs the two on separate warp groups, as NCCL's tree split). Across nodes the tree is one of the two
// trees of a double binary tree (each channel uses one); inside a node it is a chain.
//
// Two Prims serve the two phases: `up` receives from the children and sends to the parent (its
// input is the user's sendbuff, a contribution), `down` receives from the parent and sends to
// the children (its input is recvbuff, which already holds the result). Their types may differ
// (a GPU Prims sized for up to three children one way and one parent the other).
#pragma once

#include "device/common/chunk_loop.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

template <class UpPrims, class DownPrims>
ACCL_HOST_DEVICE void treeAllReduce(UpPrims& up, DownPrims& down, const TreeView& tree, const CollWork& work) {
  const bool hasParent = tree.up >= 0;
  const bool hasChildren = tree.nDown() > 0;
  const size_t size = work.chanCount;

  // Reduce phase.
  for (size_t off = 0; off < size; off += work.chunkElems) {
    const size_t elems = minSize(work.chunkElems, size - off);
    const size_t at = work.chanOffset + off;
    if (!hasChildren && !hasParent)
      up.localCopy(at, at, elems, /*postOp=*/true);
    else if (!hasChildren)
      up.send(at, elems);
    else if (hasParent)
      up.recvReduceSend(at, elems);
    else
      up.recvReduceCopy(at, at, elems, /*postOp=*/true);
  }
  // Broadcast phase.
  for (size_t off = 0; off < size; off += work.chunkElems) {
    const size_t elems = minSize(work.chunkElems, size - off);
    const size_t at = work.chanOffset + off;
    if (!hasParent) {
      if (hasChildren) down.send(at, elems);
    } else if (hasChildren) {
      down.recvCopySend(at, elems);
    } else {
      down.recv(at, elems);
    }
  }
}

}  // namespace accl
