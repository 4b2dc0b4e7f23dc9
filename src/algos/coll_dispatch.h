// The one execution skeleton of a collective work item, for every backend: which schedule a
// (function, algorithm) runs, and which peers each Prims of it gets — a ring's Prims receives
// from the previous rank and sends to the next; a tree's reduce-phase Prims receives from the
// children and sends to the parent, its broadcast-phase Prims the reverse, forwarding the result
// instead of a contribution. A backend supplies only how to reach a peer and how to build and
// finish a Prims, as an Exec type:
//
//   struct Exec {
//     using Args = ...;   // its Prims' arguments: input, output, inputIsContribution,
//                         // recv[] / nRecv, send[] / nSend (up to kMaxTreeChildren each)
//     Args baseArgs() const;                                    // buffers, type, op, protocol
//     bool addRecv(Args& a, PeerRole role, int slot, int peer);  // false: no connection
//     bool addSend(Args& a, PeerRole role, int slot, int peer);  //   (the Exec records why)
//     template <int kMaxRecv, int kMaxSend> auto prims(const Args& a);  // a Prims, by value
//     template <class P> bool finish(P& prims);   // false when the Prims failed (recorded)
//     bool unsupported(const CollWork& w);        // no schedule: records why, returns false
//   };
//
// An Exec whose Prims run on a group of threads that it can cut in two (the CUDA backend: a
// block's warps) may also declare
//
//     static constexpr bool kTreeGroups = true;
//     bool canSplit() const;                      // false: too few threads (a single warp)
//     int treeGroup(Args& up, Args& down) const;  // gives `up` the first half of the threads,
//                                                 // `down` the rest, each its own barriers;
//                                                 // returns which runs here (0 up, 1 down)
//     bool joinGroups(bool ok) const;             // every thread: true when both groups were ok
//
// and the tree then runs its two phases at once, each on its own group (runTreeWork). Without
// it (the host backend: one thread per channel) the phases run in turn.
//
// The function and algorithm may be fixed at compile time (the CUDA kernels instantiate one
// function per id, so each carries only its own schedule) or left to run time (kAny: the host
// backend). Any algorithm other than Tree runs the ring schedule, as the tuner only hands Ring,
// Tree and the host's one-round exchange (which never reaches here) to the backends.
#pragma once

#include <type_traits>

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/tree_all_reduce.h"
#include "device/common/host_device.h"
#include "device/common/topology_view.h"
#include "device/common/work.h"

namespace accl {

// Fixed at run time rather than compile time (function or algorithm).
constexpr int kAny = -1;

// Why a Prims holds a connection: an Exec that keeps its connections by role (the CUDA channel
// table) finds them from this; one that keeps them by peer rank (the host table) from `peer`.
enum class PeerRole { kRingPrev, kRingNext, kTreeChild, kTreeParent };

// Runs the ring schedule of function kFunc (kAny: w.func) over `prims`; false when that function
// has no ring schedule.
template <int kFunc, class Prims>
ACCL_HOST_DEVICE bool runRingSchedule(Prims& prims, const RingView& ring, const CollWork& w) {
  if constexpr (kFunc == kAny) {
    switch (w.func) {
      case kFuncAllReduce: return runRingSchedule<kFuncAllReduce>(prims, ring, w);
      case kFuncAllGather: return runRingSchedule<kFuncAllGather>(prims, ring, w);
      case kFuncReduceScatter: return runRingSchedule<kFuncReduceScatter>(prims, ring, w);
      case kFuncBroadcast: return runRingSchedule<kFuncBroadcast>(prims, ring, w);
      case kFuncReduce: return runRingSchedule<kFuncReduce>(prims, ring, w);
      default: return false;
    }
  } else if constexpr (kFunc == kFuncAllReduce) {
    ringAllReduce(prims, ring, w);
  } else if constexpr (kFunc == kFuncAllGather) {
    ringAllGather(prims, ring, w);
  } else if constexpr (kFunc == kFuncReduceScatter) {
    ringReduceScatter(prims, ring, w);
  } else if constexpr (kFunc == kFuncBroadcast) {
    ringBroadcast(prims, ring, w);
  } else if constexpr (kFunc == kFuncReduce) {
    ringReduce(prims, ring, w);
  } else {
    return false;
  }
  return true;
}

template <int kFunc, class Exec>
ACCL_HOST_DEVICE bool runRingWork(Exec& x, const CollWork& w, const RingView& ring) {
  if constexpr (kFunc != kAny && kFunc != kFuncAllReduce && kFunc != kFuncAllGather &&
                kFunc != kFuncReduceScatter && kFunc != kFuncBroadcast && kFunc != kFuncReduce) {
    return x.unsupported(w);
  } else {
    if (kFunc == kAny && w.func != kFuncAllReduce && w.func != kFuncAllGather && w.func != kFuncReduceScatter &&
        w.func != kFuncBroadcast && w.func != kFuncReduce)
      return x.unsupported(w);
    typename Exec::Args a = x.baseArgs();
    if (ring.nranks > 1) {
      if (!x.addRecv(a, PeerRole::kRingPrev, 0, ring.rankAt(ring.index - 1))) return false;
      if (!x.addSend(a, PeerRole::kRingNext, 0, ring.rankAt(ring.index + 1))) return false;
    }
    auto prims = x.template prims<1, 1>(a);  // one peer each way: fewer registers on a GPU
    runRingSchedule<kFunc>(prims, ring, w);
    return x.finish(prims);
  }
}

// Whether Exec declares kTreeGroups = true (see the header comment); false when it does not say.
template <class Exec, class = void>
struct ExecHasTreeGroups : std::false_type {};
template <class Exec>
struct ExecHasTreeGroups<Exec, std::void_t<decltype(Exec::kTreeGroups)>>
    : std::integral_constant<bool, Exec::kTreeGroups> {};

template <int kFunc, class Exec>
ACCL_HOST_DEVICE bool runTreeWork(Exec& x, const CollWork& w, const TreeView& tree) {
  if constexpr (kFunc != kAny && kFunc != kFuncAllReduce) {
    return x.unsupported(w);
  } else {
    if (kFunc == kAny && w.func != kFuncAllReduce) return x.unsupported(w);
    typename Exec::Args up = x.baseArgs();
    typename Exec::Args down = up;
    down.input = w.recvbuff;  // the broadcast phase forwards the result, not a contribution
    down.inputIsContribution = false;
    for (int i = 0; i < kMaxTreeChildren; ++i) {
      const int child = tree.down[i];
      if (child < 0) continue;
      if (!x.addRecv(up, PeerRole::kTreeChild, i, child)) return false;
      if (!x.addSend(down, PeerRole::kTreeChild, i, child)) return false;
    }
    if (tree.up >= 0) {
      if (!x.addSend(up, PeerRole::kTreeParent, 0, tree.up)) return false;
      if (!x.addRecv(down, PeerRole::kTreeParent, 0, tree.up)) return false;
    }
    if constexpr (ExecHasTreeGroups<Exec>::value) {
      // Threads that split: at a leaf or middle node, the reduce phase on one group and the
      // broadcast phase on the other, at once. The root (children, no parent) cannot split, as
      // its broadcast sends what its reduce writes: one Prims reduces each chunk and sends it
      // straight back down. A single rank, or threads that do not split, run the phases in turn.
      // Each phase loop has one call site (on a GPU every call site is a copy of the Prims).
      // Every rank of the tree must decide alike (the CUDA kernel's blocks all have the same
      // size): the root takes a chunk's contributions only once it can send that chunk's result,
      // so a child that ran its phases in turn, not reading results until its reduce is done,
      // would wait on the root for ever after 2 x kFifoSteps chunks.
      const bool split = x.canSplit() && (tree.up >= 0 || tree.nDown() > 0);
      if (split && tree.up < 0) {
        typename Exec::Args root = up;  // receives from the children; sends to them too
        for (int i = 0; i < down.nSend; ++i) root.send[root.nSend++] = down.send[i];
        auto rootPrims = x.template prims<kMaxTreeChildren, kMaxTreeChildren>(root);
        treeRootReduceBroadcast(rootPrims, w);
        return x.finish(rootPrims);
      }
      const int group = split ? x.treeGroup(up, down) : -1;  // -1: both phases, in turn
      bool ok = true;
      if (group != 1) {
        auto upPrims = x.template prims<kMaxTreeChildren, 1>(up);
        treeReduceUp(upPrims, tree, w);
        ok = x.finish(upPrims);
      }
      if (group != 0) {
        auto downPrims = x.template prims<1, kMaxTreeChildren>(down);
        treeBroadcastDown(downPrims, tree, w);
        ok = x.finish(downPrims) && ok;
      }
      return split ? x.joinGroups(ok) : ok;
    } else {
      // Children below, one parent above: per-peer state only for the peers each phase can have.
      auto upPrims = x.template prims<kMaxTreeChildren, 1>(up);
      auto downPrims = x.template prims<1, kMaxTreeChildren>(down);
      treeAllReduce(upPrims, downPrims, tree, w);
      const bool upOk = x.finish(upPrims);
      const bool downOk = x.finish(downPrims);
      return upOk && downOk;
    }
  }
}

// Runs one collective work item: the schedule of (kFunc, kAlgo), or of (w.func, w.algo) where
// those are kAny. Returns false when it failed (the Exec has recorded why).
template <int kAlgo = kAny, int kFunc = kAny, class Exec>
ACCL_HOST_DEVICE bool runCollWork(Exec& x, const CollWork& w, const RingView& ring, const TreeView& tree) {
  if constexpr (kAlgo == kAny) {
    if (w.algo == kAlgoTree) return runTreeWork<kFunc>(x, w, tree);
    return runRingWork<kFunc>(x, w, ring);
  } else if constexpr (kAlgo == kAlgoTree) {
    return runTreeWork<kFunc>(x, w, tree);
  } else {
    return runRingWork<kFunc>(x, w, ring);
  }
}

}  // namespace accl
