// Enqueue: the path from a collective or point-to-point call to execution. A call is checked
// (communicator, type, op, root/peer, buffers, count) and becomes a task of the calling thread's
// group; at the outermost group end the tasks of each communicator become a plan of their own —
// per channel, the work items with algorithm, protocol and chunk chosen, and the user's streams —
// which the communicator's backend (core/engine/backend.h) connects and launches. On the host backend
// the group end returns when all work is done; an asynchronous backend returns once the work is
// enqueued on the stream.
#pragma once

#include <cstddef>

#include "device/common/ids.h"
#include "nccl.h"

struct ncclComm;

namespace accl {

struct CollCall {
  const char* name;  // the API function, for messages
  FuncId func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // NCCL's count argument (per-rank block for AllGather / ReduceScatter)
  ncclDataType_t type;
  ncclRedOp_t op;  // ignored for Broadcast / AllGather
  int root;        // Broadcast / Reduce
  const ncclCollConfig_t* config = nullptr;  // the nccl*Config variants (core/engine/coll_config.h); NULL: plain call
  // The user's stream. The host backend ignores it (its launches finish before the call returns).
  cudaStream_t stream = nullptr;
};

struct P2pCall {
  const char* name;
  bool isSend;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t type;
  int peer;
  // Channel bounds of a nccl*Config composition (AlltoAll / Gather / Scatter); 0: unset.
  int minChannels = 0;
  int maxChannels = 0;
  cudaStream_t stream = nullptr;  // the user's stream (ignored by the host backend)
  // The composition's userProfilerTag, for profiler events (ncclSend / ncclRecv have none: 0).
  uint64_t profilerTag = 0;
};

// Argument checks shared by every operation (and by the send/recv compositions): a datatype in
// range, and `count` x `multiplier` elements whose byte size exists.
ncclResult_t checkType(const char* call, ncclDataType_t type);
ncclResult_t checkCount(const char* call, size_t count, size_t multiplier, ncclDataType_t type);

ncclResult_t enqueueColl(ncclComm* comm, const CollCall& call);
ncclResult_t enqueueP2p(ncclComm* comm, const P2pCall& call);

// Called by the outermost group end: builds and launches the plans of every communicator that
// got tasks in this thread's group, then clears them.
ncclResult_t launchGroupTasks();
// Drops this thread's pending tasks (a call in the group failed).
void discardGroupTasks();
// Whether this thread's open group holds operations of `comm` (ncclCommSuspend refuses then).
bool hasQueuedTasks(const ncclComm* comm);
// The tuner's estimate, in microseconds, of this thread's pending tasks (ncclGroupSimulateEnd):
// per communicator the sum of its operations' predicted times; communicators run concurrently,
// so the group takes the longest of those sums. Send/recv use the model's SendRecv entry.
ncclResult_t estimateGroupTasksUs(float* us);

}  // namespace accl
