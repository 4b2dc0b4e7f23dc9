// UserSends: the zero-copy sends one HostPrims has in flight. Over a network end that allows it
// (HostConnEnd::userSendMin), a large Simple step whose value already sits in the user's memory
// (the output it was just written to, or an input sent as is; over IB verbs or a plugin, only
// inside a buffer registered with ncclCommRegister) is published as a pointer there
// (kFifoStepUserPtr, device/common/fifo.h) and the proxy sends it from that memory. The proxy may
// read it until the sender's head passes the step, so this class keeps the one promise that makes
// it safe whatever the timing: nothing this rank does writes to a user range while a send of it is
// in flight. Before the Prims writes output (waitClear) it waits for the sends that read that
// range, and before the operation is reported complete (waitAll) for every one of them — head
// moves without this rank (the proxy publishes it), so neither wait depends on its next steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/host/fifo_end.h"
#include "device/common/dev_red_op.h"
#include "nccl.h"

namespace accl {

// Publishes the current step of `f` as [data, data + bytes) of the user's memory, inside the
// registered buffer `reg` (id 0: none; an end that needs one never gets such a step).
void publishUserSend(FifoView& f, const char* data, size_t bytes, const UserBufferReg& reg = {});
// After an error: if head has not passed `step` yet, closes the staging FIFO of `f`, so that its
// proxy posts no user-pointer step of it any more.
void abandonUserSends(FifoView& f, uint64_t step);

class UserSends {
 public:
  // Whether a step of `bytes` may go to every one of the `n` send ends as a user pointer.
  static bool allowed(const HostConnEnd* ends, int n, size_t bytes);
  // Whether one of the `n` send ends sends only from registered buffers (IB verbs, plugins): a
  // step then goes as a user pointer only from inside a buffer registered with ncclCommRegister.
  static bool needRegistration(const HostConnEnd* ends, int n);
  // Whether a contribution is sent unchanged (no preOp scales it).
  static bool inputSentAsIs(const DevRedOp& op) { return op.kind != DevRedOpKind::kPreMulSum; }

  // Publishes the current step of send end `c` as [data, data + bytes) of the user's memory.
  void publish(const HostConnEnd& c, const char* data, size_t bytes, const UserBufferReg& reg = {});
  bool any() const { return !pending_.empty(); }
  // Waits until no send in flight reads [data, data + bytes).
  ncclResult_t waitClear(const char* data, size_t bytes, const WaitPolicy& policy, const char* what);
  // Waits until every send is done.
  ncclResult_t waitAll(const WaitPolicy& policy, const char* what);
  // After an error: closes the staging FIFOs of the ends with sends not yet done, so their proxy
  // posts none of them any more (one already posted may still read its range until the device
  // fails it or the communicator is aborted), and forgets them.
  void abandon();

 private:
  struct Pending {
    HostConnEnd end;
    uint64_t step;
    const char* lo;
    const char* hi;
  };
  std::vector<Pending> pending_;
};

}  // namespace accl
