// The device side of one work item: the function a DevFuncId (dev_func.h) names, written once as
// a template over the id and instantiated by the kernel translation units (fn_*.cu) into the
// device function table the kernel dispatches through (kernel.cu). Written against the
// device-primitives layer only (device/simt/simt.h), so the same code also runs on the CPU SIMT
// harness in CI (tests/unit/cuda_kernel_body_test.cc).
//
// The Prims type is CudaPrims (device/cuda/cuda_prims.h, helper "simt"), the one Prims of the
// CUDA backend: the schedules of src/algos run over it unchanged, dispatched and wired by the
// skeleton every backend shares (algos/coll_dispatch.h) with the function and algorithm fixed by
// the id; CudaCollExec below is this backend's side of that skeleton. Items are decoded by the
// one work-item codec (backend/cuda/work_codec.h).
//
// Protocols: under nvcc every id has its own instance, its Prims compiled for its protocol alone
// (CudaPrims' kProto): no protocol branch in the step loop, and registers (hence the callee saves
// at the function's entry and exit) only for the path it runs -- issue 18 fault 8, see
// docs/kernel_report.md. The CPU builds (the virtual GPU's kernel table, unit tests on the SIMT
// harness) instantiate one function per (collective, op, type, algorithm) that takes the
// protocol from the item at run time (devInstanceOf): the same code with the protocol a variable,
// at a third of the host compile time.
#pragma once

#if defined(__CUDACC__)
#define ACCL_DEV_FN __device__
#else
#define ACCL_DEV_FN
#endif

#include <utility>

#include "algos/coll_dispatch.h"
#include "backend/cuda/dev_func.h"
#include "backend/cuda/kernel_args.h"
#include "backend/cuda/work_codec.h"
#include "device/common/dtypes.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "device/simt/simt.h"

namespace accl {

// A work item's device function: returns false when a wait was aborted.
using DevFn = bool (*)(const DevWorkItem& item, const DevChannel& ch, const DevComm& comm);


// Which kernel translation unit instantiates an id (fn_group<N>.cu, N = type group x 3 +
// protocol): a type group is the copy collectives with float32/bfloat16 (group 0, so the
// ACCL_KERNEL_SUBSET build compiles three small TUs), then two types per group, except the fp8
// types, one each (their reductions convert every element, and together their LL128 unit alone
// took 259 s of CPU and 1.6 GB); each protocol of a group has its own TU, since every protocol id
// is its own instance under nvcc.
constexpr int kDevTypeGroups = 7;
constexpr int kDevFuncGroups = kDevTypeGroups * kNumProtos;
static_assert(kDevFuncGroups == 21, "fn_group0..20.cu, the devFillGroup<N> declarations below and kernel.cu's "
                                    "fillTableKernel each list every group by hand");
ACCL_HOST_DEVICE constexpr int devTypeGroup(const DevFuncKey& k) {
  if (devCollIsCopy(k.coll)) return 0;
  switch (k.type) {
    case ncclFloat32: case ncclBfloat16: return 0;
    case ncclFloat16: case ncclFloat64: return 1;
    case ncclFloat8e4m3: return 2;
    case ncclFloat8e5m2: return 3;
    case ncclInt8: case ncclUint8: return 4;
    case ncclInt32: case ncclUint32: return 5;
    default: return 6;
  }
}
ACCL_HOST_DEVICE constexpr int devFuncGroup(int id) {
  const DevFuncKey k = devFuncKey(id);
  return devTypeGroup(k) * kNumProtos + int(k.proto);
}

#if defined(__CUDACC__)
constexpr bool kDevInstancePerProto = true;
#else
constexpr bool kDevInstancePerProto = false;
#endif

// The id whose instantiation serves `id`: itself under nvcc; on the CPU, the key's Simple id,
// which serves all three protocols (see the header comment).
ACCL_HOST_DEVICE constexpr int devInstanceOf(int id) {
  if (kDevInstancePerProto) return id;
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

// Records a kernel-side error (thread 0; the first one stays, up to a race between blocks that
// fail at the same moment, which only affects which of their codes is reported).
ACCL_SIMT_FN void devRaise(const DevComm& comm, uint32_t code, uint32_t detail) {
  if (simt::threadIndex() != 0 || simt::loadVolatile32(comm.errorWord) != 0) return;
  simt::storeVolatile32(comm.errorDetail, detail);
  simt::fence<simt::Scope::kSystem>();
  simt::storeVolatile32(comm.errorWord, code);
}

// The CUDA side of the skeleton's Exec contract (algos/coll_dispatch.h): connections found by
// role in the channel's device table, a CudaPrims per phase (one peer each way on a ring; a tree's
// two phases on two warp groups at once), and a missing connection or schedule raised as a
// kernel error naming function id `id`.
template <class T, class Op, int kProto>
class CudaCollExec {
 public:
  using Args = CudaPrimsArgs;

  ACCL_SIMT_FN CudaCollExec(const DevWorkItem& item, const DevChannel& ch, const DevComm& comm, const Op& op, int id)
      : item_(item), ch_(ch), comm_(comm), op_(op), id_(id) {}

  ACCL_SIMT_FN Args baseArgs() const {
    Args a;
    a.input = item_.sendbuff;
    a.output = item_.recvbuff;
    // The instance's protocol, or the item's where one instance serves all three.
    a.proto = static_cast<ProtoId>(kProto == kAnyProto ? int(devFuncKey(item_.funcId).proto) : kProto);
    a.abortFlag = comm_.abortFlag;
    return a;
  }
  ACCL_SIMT_FN bool addRecv(Args& a, PeerRole role, int slot, int) {
    PrimsConn* c = role == PeerRole::kRingPrev    ? ch_.ringRecv
                   : role == PeerRole::kTreeChild ? ch_.treeDownRecv[slot]
                                                  : ch_.treeUpRecv;
    if (!c) return noConnection();
    a.recv[a.nRecv++] = c;
    return true;
  }
  ACCL_SIMT_FN bool addSend(Args& a, PeerRole role, int slot, int) {
    PrimsConn* c = role == PeerRole::kRingNext    ? ch_.ringSend
                   : role == PeerRole::kTreeChild ? ch_.treeDownSend[slot]
                                                  : ch_.treeUpSend;
    if (!c) return noConnection();
    a.send[a.nSend++] = c;
    return true;
  }
  template <int kMaxRecv, int kMaxSend>
  ACCL_SIMT_FN CudaPrims<T, Op, kMaxRecv, kMaxSend, kProto> prims(const Args& a) const {
    return CudaPrims<T, Op, kMaxRecv, kMaxSend, kProto>(a, op_);
  }
  template <class P>
  ACCL_SIMT_FN bool finish(P& p) const {
    return !p.aborted();
  }

  // The tree's phases on two warp groups of the block (algos/coll_dispatch.h): the reduce phase
  // on warps [0, W/2) with barriers 1 and 2, the broadcast phase on [W/2, W) with 3 and 4.
  static constexpr bool kTreeGroups = true;
  ACCL_SIMT_FN bool canSplit() const { return simt::warpCount() >= 2; }
  ACCL_SIMT_FN int treeGroup(Args& up, Args& down) const {
    // The whole block first: the previous item's Simple data warps leave its last step with a
    // bar.arrive on barrier 2, and that barrier's round completes only when its peer warps sync.
    // A group that reused barrier 1 or 2 with its own thread count before then would join the
    // old round (a different count: undefined on a GPU, a launch failure on the CPU harness).
    simt::syncBlock();
    const int half = simt::warpCount() / 2;
    up.firstWarp = 0;
    up.nWarps = half;
    up.barrierBase = 1;
    down.firstWarp = half;
    down.nWarps = simt::warpCount() - half;
    down.barrierBase = 3;
    return simt::warpIndex() < half ? 0 : 1;
  }
  // After both groups' last step (barrier 0, the whole block): one answer for the block, and
  // every connection step a group wrote back visible to the next item's Prims.
  ACCL_SIMT_FN bool joinGroups(bool ok) const { return !simt::syncBlockOr(!ok); }
  ACCL_SIMT_FN bool unsupported(const CollWork&) const {
    devRaise(comm_, kDevErrNoKernel, uint32_t(id_));
    return false;
  }

 private:
  ACCL_SIMT_FN bool noConnection() const {
    devRaise(comm_, kDevErrNoConnection, uint32_t(id_));
    return false;
  }

  const DevWorkItem& item_;
  const DevChannel& ch_;
  const DevComm& comm_;
  const Op& op_;
  int id_;
};

template <int Id>
ACCL_DEV_FN bool devRun(const DevWorkItem& item, const DevChannel& ch, const DevComm& comm) {
  constexpr DevFuncKey k = devFuncKey(Id);
  using T = DtypeT<static_cast<ncclDataType_t>(k.type)>;
  const auto op = devOpFunctor<T, k.op>(item);
  using Op = std::decay_t<decltype(op)>;
  const CollWork w = decodeCollItem(item);
  constexpr int kProto = kDevInstancePerProto ? int(k.proto) : kAnyProto;
  CudaCollExec<T, Op, kProto> exec(item, ch, comm, op, Id);
  const RingView ring{ch.nRanks, ch.ringIndex, ch.ringUserRanks};
  return runCollWork<k.algo, k.coll>(exec, w, ring, ch.tree);
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
// One per kernel translation unit (kDevFuncGroups).
__device__ void devFillGroup0(DevFn* table);
__device__ void devFillGroup1(DevFn* table);
__device__ void devFillGroup2(DevFn* table);
__device__ void devFillGroup3(DevFn* table);
__device__ void devFillGroup4(DevFn* table);
__device__ void devFillGroup5(DevFn* table);
__device__ void devFillGroup6(DevFn* table);
__device__ void devFillGroup7(DevFn* table);
__device__ void devFillGroup8(DevFn* table);
__device__ void devFillGroup9(DevFn* table);
__device__ void devFillGroup10(DevFn* table);
__device__ void devFillGroup11(DevFn* table);
__device__ void devFillGroup12(DevFn* table);
__device__ void devFillGroup13(DevFn* table);
__device__ void devFillGroup14(DevFn* table);
__device__ void devFillGroup15(DevFn* table);
__device__ void devFillGroup16(DevFn* table);
__device__ void devFillGroup17(DevFn* table);
__device__ void devFillGroup18(DevFn* table);
__device__ void devFillGroup19(DevFn* table);
__device__ void devFillGroup20(DevFn* table);

#define ACCL_DEFINE_FILL_GROUP(G)                                             \
  __device__ void devFillGroup##G(DevFn* table) {                             \
    devFillGroup<G>(table, std::make_integer_sequence<int, kDevNumFuncs>{}); \
  }
#endif

}  // namespace accl
