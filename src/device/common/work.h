// One unit of work for one channel, as the enqueue path hands it to a backend: which schedule
// to run, on which buffers and element range, with which type, op, protocol and chunk size.
// The same struct feeds the host executor and (later) the CUDA kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/dev_red_op.h"
#include "device/common/ids.h"
#include "nccl.h"

namespace accl {

struct CollWork {
  FuncId func;
  AlgoId algo;
  ProtoId proto;
  ncclDataType_t type;
  DevRedOp op;
  const void* sendbuff;
  void* recvbuff;
  // Elements as the user counts them: the whole vector for AllReduce/Broadcast/Reduce, one
  // rank's block for AllGather/ReduceScatter.
  size_t count;
  int root;
  // This channel's share of `count`: elements [chanOffset, chanOffset + chanCount).
  size_t chanOffset;
  size_t chanCount;
  // Elements one FIFO step carries for this work's protocol (>= 1).
  size_t chunkElems;
};

// One point-to-point transfer of a channel: this rank sends to or receives from `peer`.
struct P2pWork {
  bool isSend;
  int peer;
  ProtoId proto;
  ncclDataType_t type;
  const void* sendbuff;  // isSend
  void* recvbuff;        // !isSend
  size_t chanOffset;     // elements of this channel's share
  size_t chanCount;
  size_t chunkElems;
};

}  // namespace accl
