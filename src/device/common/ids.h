// The indices every layer agrees on: NCCL's algorithm (NCCL_ALGO_*), protocol (NCCL_PROTO_*) and
// function (ncclFunc_t) numbering. Shared by the tuner, the enqueue path and both backends.
#pragma once

namespace accl {

// NCCL's algorithm indices (NCCL_ALGO_*).
enum AlgoId : int {
  kAlgoTree = 0,
  kAlgoRing = 1,
  kAlgoCollNetDirect = 2,
  kAlgoCollNetChain = 3,
  kAlgoNvls = 4,
  kAlgoNvlsTree = 5,
  kAlgoPat = 6,
  kNumAlgos = 7,
};
// accl's host-only one-round all-reduce (every rank sends its vector to every peer and reduces
// locally), ranked by the tuner after NCCL's seven; NCCL_ALGO calls it "OneShot".
inline constexpr int kAlgoOneShot = kNumAlgos;
inline constexpr int kNumTunerAlgos = kNumAlgos + 1;

// NCCL's protocol indices (NCCL_PROTO_*).
enum ProtoId : int {
  kProtoLL = 0,
  kProtoLL128 = 1,
  kProtoSimple = 2,
  kNumProtos = 3,
};

// NCCL's ncclFunc_t order for the functions the tuner sees. The first kNumCollFuncs take
// NCCL_ALGO/NCCL_PROTO prefixes; SendRecv is carried along unfiltered.
enum FuncId : int {
  kFuncBroadcast = 0,
  kFuncReduce = 1,
  kFuncAllGather = 2,
  kFuncReduceScatter = 3,
  kFuncAllReduce = 4,
  kFuncSendRecv = 5,
  kNumFilterFuncs = 6,
};
inline constexpr int kNumCollFuncs = 5;

// The public entry point of a collective function ("ncclAllReduce"), for messages; `otherwise`
// for send/recv and values out of range.
inline const char* collApiName(int func, const char* otherwise) {
  switch (func) {
    case kFuncBroadcast: return "ncclBroadcast";
    case kFuncReduce: return "ncclReduce";
    case kFuncAllGather: return "ncclAllGather";
    case kFuncReduceScatter: return "ncclReduceScatter";
    case kFuncAllReduce: return "ncclAllReduce";
    default: return otherwise;
  }
}

}  // namespace accl
