// The device side of one work item: the function a DevFuncId (dev_func.h) names, written once as
// a template over the id and instantiated by the kernel translation units (fn_*.cu) into the
// device function table the kernel dispatches through (kernel.cu). Written against the
// device-primitives layer only (device/simt/simt.h), so the same code also runs on the CPU SIMT
// harness in CI (tests/unit/cuda_kernel_body_test.cc).
//
// The Prims type is CudaPrims (device/cuda/cuda_prims.h, helper "simt"), the one Prims of the
// CUDA backend: the schedules of src/algos run over it unchanged. CudaPrims takes the protocol
// at run time, so the three protocol ids of a (collective, op, type, algorithm) share one
// instantiation (kInstProto below): the table still has one entry per protocol; when the Prims
// take the protocol as a template parameter, instantiating per protocol is a one-line change.
#pragma once

#if defined(__CUDACC__)
#define ACCL_DEV_FN __device__
#else
#define ACCL_DEV_FN
#endif

#include <utility>

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/tree_all_reduce.h"
#include "backend/cuda/dev_func.h"
#include "backend/cuda/kernel_args.h"
#include "device/common/dtypes.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "device/simt/simt.h"

namespace accl {

// A work item's device function: returns false when a wait was aborted.
using DevFn = bool (*)(const DevWorkItem& item, const DevChannel& ch, const DevComm& comm);


// Which kernel translation unit instantiates an id (fn_<group>.cu): the copy collectives and
// float32/bfloat16 in group 0 (so the ACCL_KERNEL_SUBSET build compiles one TU), then two types
// per unit.
constexpr int kDevFuncGroups = 6;
ACCL_HOST_DEVICE constexpr int devFuncGroup(int id) {
  const DevFuncKey k = devFuncKey(id);
  if (devCollIsCopy(k.coll)) return 0;
  switch (k.type) {
    case ncclFloat32: case ncclBfloat16: return 0;
    case ncclFloat16: case ncclFloat64: return 1;
    case ncclFloat8e4m3: case ncclFloat8e5m2: return 2;
    case ncclInt8: case ncclUint8: return 3;
    case ncclInt32: case ncclUint32: return 4;
    default: return 5;
  }
}

// The id whose instantiation serves `id` (same key, protocol Simple: see the header comment).
ACCL_HOST_DEVICE constexpr int devInstanceOf(int id) {
  const DevFuncKey k = devFuncKey(id);
  return devFuncId(k.coll, k.op, k.type, k.algo, kProtoSimple);
}

// The reduction functor of op kind kOp on T, from the item's argument.
template <class T, int kOp>
ACCL_SIMT_FN auto devOpFunctor(const DevWorkItem& item) {
  if constexpr (kOp == int(DevRedOpKind::kSum)) return RedSum<T>{};
  else if constexpr (kOp == int(DevRedOpKind::kProd)) return RedProd<T>{};
  else if constexpr (kOp == int(DevRedOpKind::kMax)) return RedMax<T>{};
  else if constexpr (kOp == int(DevRedOpKind::kMin)) return RedMin<T>{};
  else if constexpr (kOp == int(DevRedOpKind::kPreMulSum)) {
    DevRedOp op;
    op.kind = DevRedOpKind::kPreMulSum;
    op.scalarIsPtr = (item.flags & kDevItemScalarIsPtr) != 0;
    op.arg = item.opArg;
    return RedPreMulSum<T>{loadRedOpScalar<T>(op)};
  } else {
    return RedSumPostDiv<T>{item.opArg};
  }
}

ACCL_SIMT_FN CollWork devCollWork(const DevWorkItem& item, const DevFuncKey& k) {
  CollWork w{};
  w.func = static_cast<FuncId>(k.coll);
  w.algo = static_cast<AlgoId>(k.algo);
  w.proto = static_cast<ProtoId>(k.proto);
  w.type = static_cast<ncclDataType_t>(k.type);
  w.sendbuff = item.sendbuff;
  w.recvbuff = item.recvbuff;
  w.count = item.count;
  w.root = item.rootOrPeer;
  w.chanOffset = item.chanOffset;
  w.chanCount = item.chanCount;
  w.chunkElems = item.chunkElems;
  return w;
}

// Records a kernel-side error (thread 0; the first one stays, up to a race between blocks that
// fail at the same moment, which only affects which of their codes is reported).
ACCL_SIMT_FN void devRaise(const DevComm& comm, uint32_t code, uint32_t detail) {
  if (simt::threadIndex() != 0 || simt::loadVolatile32(comm.errorWord) != 0) return;
  simt::storeVolatile32(comm.errorDetail, detail);
  simt::fence<simt::Scope::kSystem>();
  simt::storeVolatile32(comm.errorWord, code);
}

template <int Id>
ACCL_DEV_FN bool devRun(const DevWorkItem& item, const DevChannel& ch, const DevComm& comm) {
  constexpr DevFuncKey k = devFuncKey(Id);
  using T = DtypeT<static_cast<ncclDataType_t>(k.type)>;
  const auto op = devOpFunctor<T, k.op>(item);
  using Op = std::decay_t<decltype(op)>;
  CollWork w = devCollWork(item, k);
  w.proto = static_cast<ProtoId>(devFuncKey(item.funcId).proto);  // the item's own protocol

  CudaPrimsArgs base;
  base.input = item.sendbuff;
  base.output = item.recvbuff;
  base.proto = w.proto;
  base.abortFlag = comm.abortFlag;

  if constexpr (k.algo == kAlgoTree) {
    CudaPrimsArgs up = base, down = base;
    down.input = item.recvbuff;  // the broadcast phase forwards the result
    down.inputIsContribution = false;
    for (int i = 0; i < kMaxTreeChildren; ++i) {
      if (ch.tree.down[i] < 0) continue;
      if (!ch.treeDownRecv[i] || !ch.treeDownSend[i]) return devRaise(comm, kDevErrNoConnection, Id), false;
      up.recv[up.nRecv++] = ch.treeDownRecv[i];
      down.send[down.nSend++] = ch.treeDownSend[i];
    }
    if (ch.tree.up >= 0) {
      if (!ch.treeUpSend || !ch.treeUpRecv) return devRaise(comm, kDevErrNoConnection, Id), false;
      up.send[up.nSend++] = ch.treeUpSend;
      down.recv[down.nRecv++] = ch.treeUpRecv;
    }
    CudaPrims<T, Op> upPrims(up, op);
    CudaPrims<T, Op> downPrims(down, op);
    treeAllReduce(upPrims, downPrims, ch.tree, w);
    return !upPrims.aborted() && !downPrims.aborted();
  } else {
    CudaPrimsArgs a = base;
    if (ch.nRanks > 1) {
      if (!ch.ringRecv || !ch.ringSend) return devRaise(comm, kDevErrNoConnection, Id), false;
      a.recv[a.nRecv++] = ch.ringRecv;
      a.send[a.nSend++] = ch.ringSend;
    }
    const RingView ring{ch.nRanks, ch.ringIndex, ch.ringUserRanks};
    CudaPrims<T, Op, 1, 1> prims(a, op);  // a ring has one peer each way: fewer registers
    if constexpr (k.coll == kFuncAllReduce) ringAllReduce(prims, ring, w);
    else if constexpr (k.coll == kFuncAllGather) ringAllGather(prims, ring, w);
    else if constexpr (k.coll == kFuncReduceScatter) ringReduceScatter(prims, ring, w);
    else if constexpr (k.coll == kFuncBroadcast) ringBroadcast(prims, ring, w);
    else if constexpr (k.coll == kFuncReduce) ringReduce(prims, ring, w);
    return !prims.aborted();
  }
}

// Stores, for every id of `kGroup` this build contains, the address of its function (the
// instantiation of devInstanceOf(id)) in `table`; point-to-point ids are run by the kernel itself.
template <int kGroup, int kId>
ACCL_SIMT_FN void devFillOne(DevFn* table) {
  if constexpr (devFuncGroup(kId) == kGroup && devFuncBuilt(kId) && devFuncKey(kId).coll != kFuncSendRecv)
    table[kId] = &devRun<devInstanceOf(kId)>;
}
template <int kGroup, int... kIds>
ACCL_SIMT_FN void devFillGroup(DevFn* table, std::integer_sequence<int, kIds...>) {
  (devFillOne<kGroup, kIds>(table), ...);
}

// Stores the functions of exactly the ids `kIds` (tests on the CPU harness instantiate a few).
template <int kId>
ACCL_SIMT_FN void devFillAny(DevFn* table) {
  if constexpr (devFuncInFullSet(kId) && devFuncKey(kId).coll != kFuncSendRecv) table[kId] = &devRun<devInstanceOf(kId)>;
}
template <int... kIds>
ACCL_SIMT_FN void devFillIds(DevFn* table, std::integer_sequence<int, kIds...>) {
  (devFillAny<kIds>(table), ...);
}

#if defined(__CUDACC__)
// One per kernel translation unit.
__device__ void devFillGroup0(DevFn* table);
__device__ void devFillGroup1(DevFn* table);
__device__ void devFillGroup2(DevFn* table);
__device__ void devFillGroup3(DevFn* table);
__device__ void devFillGroup4(DevFn* table);
__device__ void devFillGroup5(DevFn* table);

#define ACCL_DEFINE_FILL_GROUP(G)                                             \
  __device__ void devFillGroup##G(DevFn* table) {                             \
    devFillGroup<G>(table, std::make_integer_sequence<int, kDevNumFuncs>{}); \
  }
#endif

}  // namespace accl
