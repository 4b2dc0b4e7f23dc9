// DevFuncId: the function id of a CUDA work item — one dense number for (collective, reduction
// op kind, element type, algorithm, protocol) — and which ids the kernels are built for. Host- and
// device-compilable (no CUDA headers): the launch path computes ids and checks them against the
// built set, the kernel translation units instantiate one device function per built id, and the
// unit tests check coverage, all from the same constexpr functions.
//
// Canonical forms (fewer instantiations, same bytes moved):
//   * Broadcast, AllGather and SendRecv only copy: their items are rewritten to ncclUint8 with
//     op kSum (counts, offsets and chunk sizes scaled to bytes by the packer, work_batch.h).
//   * Reduce, ReduceScatter and AllReduce keep their (type, op kind): kPreMulSum exists for
//     floating types only, kSumPostDiv (integer ncclAvg) for integer types only.
//   * Algorithms with a schedule in src/algos: Ring (every collective) and Tree (AllReduce).
//
// The sets:
//   full   every valid combination above, every type (fp8 included, sm_90), every protocol;
//   subset (CMake ACCL_KERNEL_SUBSET=ON, quick local builds): float and bfloat16 with kSum for the
//          reducing collectives, plus every copy collective; every algorithm and protocol.
#pragma once

#include <cstdint>

#include "device/common/dev_red_op.h"
#include "device/common/host_device.h"
#include "device/common/ids.h"
#include "nccl.h"

namespace accl {

constexpr int kDevNumColls = 6;       // FuncId 0..5 (kFuncBroadcast .. kFuncSendRecv)
constexpr int kDevNumOps = 6;         // DevRedOpKind 0..5
constexpr int kDevNumTypes = 12;      // ncclDataType_t 0..11 (ncclNumTypes)
constexpr int kDevNumAlgos = 2;       // AlgoId 0 (Tree) and 1 (Ring): the algorithms with a schedule
constexpr int kDevNumFuncs = kDevNumColls * kDevNumOps * kDevNumTypes * kDevNumAlgos * kNumProtos;  // 2592

#if defined(ACCL_KERNEL_SUBSET) && ACCL_KERNEL_SUBSET
constexpr bool kDevKernelSubset = true;
#else
constexpr bool kDevKernelSubset = false;
#endif

struct DevFuncKey {
  int coll;   // FuncId
  int op;     // DevRedOpKind
  int type;   // ncclDataType_t
  int algo;   // AlgoId (kAlgoTree or kAlgoRing)
  int proto;  // ProtoId
};

ACCL_HOST_DEVICE constexpr int devFuncId(int coll, int op, int type, int algo, int proto) {
  return (((coll * kDevNumOps + op) * kDevNumTypes + type) * kDevNumAlgos + algo) * kNumProtos + proto;
}
ACCL_HOST_DEVICE constexpr int devFuncId(const DevFuncKey& k) { return devFuncId(k.coll, k.op, k.type, k.algo, k.proto); }

ACCL_HOST_DEVICE constexpr DevFuncKey devFuncKey(int id) {
  DevFuncKey k{};
  k.proto = id % kNumProtos;
  id /= kNumProtos;
  k.algo = id % kDevNumAlgos;
  id /= kDevNumAlgos;
  k.type = id % kDevNumTypes;
  id /= kDevNumTypes;
  k.op = id % kDevNumOps;
  k.coll = id / kDevNumOps;
  return k;
}

ACCL_HOST_DEVICE constexpr bool devCollIsCopy(int coll) {
  return coll == kFuncBroadcast || coll == kFuncAllGather || coll == kFuncSendRecv;
}
ACCL_HOST_DEVICE constexpr bool devTypeIsFloat(int t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || t == ncclFloat8e4m3 ||
         t == ncclFloat8e5m2;
}

// Whether (op kind, type) is a reduction some backend runs.
ACCL_HOST_DEVICE constexpr bool devOpValidForType(int op, int type) {
  if (op == int(DevRedOpKind::kPreMulSum)) return devTypeIsFloat(type);
  if (op == int(DevRedOpKind::kSumPostDiv)) return !devTypeIsFloat(type);
  return op >= 0 && op < kDevNumOps;
}

// Every id the full kernel set contains.
ACCL_HOST_DEVICE constexpr bool devFuncInFullSet(int id) {
  if (id < 0 || id >= kDevNumFuncs) return false;
  const DevFuncKey k = devFuncKey(id);
  if (devCollIsCopy(k.coll)) return k.type == ncclUint8 && k.op == int(DevRedOpKind::kSum) && k.algo == kAlgoRing;
  if (!devOpValidForType(k.op, k.type)) return false;
  if (k.algo == kAlgoTree) return k.coll == kFuncAllReduce;
  return k.algo == kAlgoRing;
}

// The ACCL_KERNEL_SUBSET set.
ACCL_HOST_DEVICE constexpr bool devFuncInSubset(int id) {
  if (!devFuncInFullSet(id)) return false;
  const DevFuncKey k = devFuncKey(id);
  if (devCollIsCopy(k.coll)) return true;
  return k.op == int(DevRedOpKind::kSum) && (k.type == ncclFloat32 || k.type == ncclBfloat16);
}

// Whether this build's kernels contain `id`.
ACCL_HOST_DEVICE constexpr bool devFuncBuilt(int id) {
  return kDevKernelSubset ? devFuncInSubset(id) : devFuncInFullSet(id);
}

// Number of ids in a set (for tests and logs).
constexpr int devFuncCount(bool subset) {
  int n = 0;
  for (int id = 0; id < kDevNumFuncs; ++id) n += subset ? devFuncInSubset(id) : devFuncInFullSet(id);
  return n;
}

// The key a work item runs under: copy collectives become (uint8, sum, ring). `algo` must be
// kAlgoTree or kAlgoRing (anything else has no kernel; devFuncFor returns -1).
ACCL_HOST_DEVICE constexpr DevFuncKey devCanonicalKey(int coll, int op, int type, int algo, int proto) {
  if (devCollIsCopy(coll)) return DevFuncKey{coll, int(DevRedOpKind::kSum), int(ncclUint8), int(kAlgoRing), proto};
  return DevFuncKey{coll, op, type, algo, proto};
}

// The id of a work item, or -1 when the combination has no kernel in any set (an algorithm
// without a schedule, an op kind invalid for the type, values out of range).
ACCL_HOST_DEVICE constexpr int devFuncFor(int coll, int op, int type, int algo, int proto) {
  if (coll < 0 || coll >= kDevNumColls || op < 0 || op >= kDevNumOps || type < 0 || type >= kDevNumTypes ||
      proto < 0 || proto >= kNumProtos)
    return -1;
  // SendRecv has no algorithm; every collective has Ring; Tree is checked by the set below.
  if (coll != kFuncSendRecv && algo != kAlgoRing && algo != kAlgoTree) return -1;
  if (devCollIsCopy(coll) && coll != kFuncSendRecv && algo != kAlgoRing) return -1;
  const int id = devFuncId(devCanonicalKey(coll, op, type, algo, proto));
  return devFuncInFullSet(id) ? id : -1;
}

}  // namespace accl
