// The host backend's Prims: carries out the schedule steps of src/algos with one thread, through
// the FIFO protocol of device/common/fifo.h (Simple or LL). A HostPrims serves one phase of one
// work item on one channel: it knows its receive peers (fan-in, e.g. tree children) and send
// peers (fan-out), the user buffers, the element type and the reduction op. It never knows
// which collective it serves.
//
// Offsets and counts are in elements of the user buffers: `in` offsets index the input
// (a contribution: the reduction's preOp applies when it is read, if `inputIsContribution`),
// `out` offsets index the output. A step of 0 elements still moves one FIFO step, so all
// ranks stay in step.
//
// The FIFO steps themselves (wait, publish, release) are backend/host/fifo_end.h's. LL128 is a
// CUDA-only protocol: the host carries it as Simple.
//
// Errors (abort, timeout, dead peer) are sticky: the first one is kept, later steps do
// nothing, and the executor reads status() after the schedule returns.
#pragma once

#include <cstddef>
#include <vector>

#include "device/common/topology_view.h"
#include "device/common/dev_red_op.h"
#include "device/common/fifo.h"
#include "device/common/ids.h"
#include "backend/host/fifo_end.h"
#include "backend/host/host_wait.h"
#include "backend/host/user_sends.h"
#include "core/engine/engine_view.h"
#include "nccl.h"

namespace accl {

struct HostPrimsArgs {
  HostConnEnd recv[kMaxTreeChildren];
  int nRecv = 0;
  HostConnEnd send[kMaxTreeChildren];
  int nSend = 0;
  const void* input = nullptr;
  void* output = nullptr;
  bool inputIsContribution = true;
  ncclDataType_t type = ncclFloat32;
  DevRedOp op{};
  ProtoId proto = kProtoSimple;
  const WaitPolicy* wait = nullptr;
  const char* what = "collective";  // names the operation in error messages
  // The zero-copy sends of the work item, shared by its Prims (a tree's two phases write what
  // the other sent from); null: every step goes through the FIFO slots. The owner waits for them
  // (UserSends::waitAll) before the operation counts as complete.
  UserSends* userSends = nullptr;
  // The communicator's registered buffers (ncclCommRegister), for a send end that sends only from
  // them (HostConnEnd::userSendRegisteredOnly); null: such an end sends through the FIFO slots.
  const EngineView* registrations = nullptr;
};

class HostPrims {
 public:
  explicit HostPrims(const HostPrimsArgs& args);

  void send(size_t in, size_t n);
  void recv(size_t out, size_t n);
  void recvReduceSend(size_t in, size_t n);
  void recvReduceCopySend(size_t in, size_t out, size_t n, bool postOp);
  void recvCopySend(size_t out, size_t n);
  void copySend(size_t in, size_t out, size_t n, bool postOp);
  void recvReduceCopy(size_t in, size_t out, size_t n, bool postOp);
  // No peers: output = [postOp] preOp(input).
  void localCopy(size_t in, size_t out, size_t n, bool postOp);

  ncclResult_t status() const { return status_; }

  // Largest element count one step can carry for `proto`/`type` with this FIFO layout (LL128:
  // as Simple).
  static size_t chunkCapacity(const FifoLayout& layout, ProtoId proto, size_t elemSize);

 private:
  enum : unsigned { kRecv = 1, kIn = 2, kOut = 4, kSend = 8, kPost = 16 };
  void step(unsigned what, size_t in, size_t out, size_t n);
  // Pointer to the received payload of the current step from recv peer i (waits for it).
  const char* waitRecv(int i, size_t bytes);
  // Where a send peer's next payload goes (waits for a free slot); Simple writes there directly.
  char* waitSend(int i);
  void postSend(int i, const char* payload, size_t bytes);

  const char* inPtr(size_t elemOff) const { return static_cast<const char*>(args_.input) + elemOff * elemSize_; }
  char* outPtr(size_t elemOff) const { return static_cast<char*>(args_.output) + elemOff * elemSize_; }
  char* scratch(int i, size_t bytes);
  // The user memory holding the value of a `what` step (out / in), when it may be sent from there
  // to every send peer; null: through the FIFO slots. *reg: the registered buffer it lies in
  // (looked up only when a send end needs one; id 0 otherwise).
  const char* userSendSource(unsigned what, size_t in, size_t out, size_t bytes, UserBufferReg* reg);
  // Whether [p, p + n) lies in a buffer registered with ncclCommRegister; *reg names it. The
  // buffer found last is tried first (the registry's lookup takes a process-wide lock).
  bool registeredRange(const char* p, size_t n, UserBufferReg* reg);
  // Whether this `what` step of `bytes` asks its one receive to land in the output (landings.h):
  // it only stores what it receives, and the end takes such a step (*reg: the registered buffer
  // the output lies in, for an end that needs one).
  bool landsInOutput(unsigned what, size_t out, size_t bytes, UserBufferReg* reg);

  HostPrimsArgs args_;
  bool simple_;  // Simple (or LL128), else LL
  size_t elemSize_;
  ncclResult_t status_ = ncclSuccess;
  std::vector<char> scratch_[kMaxTreeChildren + 1];
  UserBufferReg lastReg_;  // the registered buffer the last zero-copy step or landing lay in (id 0: none yet)
};

}  // namespace accl
