// When a communicator object may be used and when it is freed: the registry of live handles,
// *holds* (a thread is running a call on the communicator now), *pins* (queued work refers to it)
// and the close protocol that ncclCommDestroy / ncclCommAbort / ncclCommRevoke follow.
//
// Rules (all counters are guarded by one process-wide mutex):
//  - A handle is usable while it is in the registry and not closing. Every API call that takes a
//    communicator holds it from its handle check (checkCommHandle) to its return (ApiCallScope,
//    opened by apiGuard); background jobs and group ends take explicit CommHold objects.
//  - A thread keeps a pin on the communicator its last call held (its sticky communicator), so
//    its next call on it holds without the mutex: an atomic count the closers wait for as well,
//    checked against an atomic closing flag (comm_lifetime.cc says why no hold slips past a close).
//  - Closing (destroy / abort) marks the communicator closing (new holds are refused, so a later
//    call gets ncclInvalidArgument), sets the abort flag when someone else still holds it (abort:
//    always), waits a bounded time for the holders to leave, then frees the resources. If a
//    holder is still inside after that time, the closer returns anyway and the last holder frees
//    the resources when it leaves: nothing is freed while a thread uses it.
//  - The object itself (the memory behind the handle) lives until the last pin is dropped, so
//    work queued in a group can find out at group end that its communicator went away.
#pragma once

#include <atomic>
#include <utility>

#include "nccl.h"

struct ncclComm;

namespace accl {

// A communicator's lifetime counters (ncclComm::life): the plain ones guarded by the process-wide
// mutex of comm_lifetime.cc, the atomics for the holds taken without it.
struct CommLifetime {
  int refs = 1;                // the handle, pins and holds
  int active = 0;              // holds taken under the mutex: threads using the communicator now
  bool closing = false;        // destroy/abort started: no new holds
  bool handleDropped = false;  // the closer gave up waiting: the last holder frees
  bool tearing = false;        // someone is freeing the resources
  bool tornDown = false;       // resources freed; the object waits for its last pin
  // Holds taken without the mutex by a thread that pinned the communicator on an earlier call
  // (its "sticky" communicator, comm_lifetime.cc): they count as active too.
  std::atomic<int> fastActive{0};
  std::atomic<bool> closingFlag{false};  // `closing`, for those holders
  std::atomic<int> drainWaiters{0};      // closers and quiescers waiting for the holders to leave
};

// Adds a newly allocated communicator to the registry (one reference: the handle's).
void registerComm(ncclComm* comm);

// An active use of a communicator, released by the destructor.
class CommHold {
 public:
  CommHold() = default;
  ~CommHold() { release(); }
  CommHold(CommHold&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  CommHold& operator=(CommHold&& o) noexcept {
    if (this != &o) {
      release();
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  CommHold(const CommHold&) = delete;
  CommHold& operator=(const CommHold&) = delete;

  // Takes a hold on a communicator whose memory is known to be valid (pinned, or held by the
  // caller). Fails with ncclInvalidUsage naming `call` when it is being destroyed or aborted.
  ncclResult_t acquire(const char* call, ncclComm* comm);
  void release();
  bool held() const { return comm_ != nullptr; }

 private:
  ncclComm* comm_ = nullptr;
};

// Keeps the communicator object (not its resources) alive; copyable through shared ownership.
class CommPin {
 public:
  explicit CommPin(ncclComm* comm);
  ~CommPin();
  CommPin(CommPin&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  CommPin& operator=(CommPin&& o) noexcept;
  CommPin(const CommPin&) = delete;
  CommPin& operator=(const CommPin&) = delete;
  ncclComm* get() const { return comm_; }

 private:
  ncclComm* comm_ = nullptr;
};

// Open while an API entry point runs (apiGuard): the holds taken by checkCommHandle on this thread
// are released when the outermost scope that took them ends.
class ApiCallScope {
 public:
  ApiCallScope();
  ~ApiCallScope();
  ApiCallScope(const ApiCallScope&) = delete;
  ApiCallScope& operator=(const ApiCallScope&) = delete;

 private:
  size_t mark_;
};

// The handle check behind checkCommHandle: `comm` must be registered and not closing. Inside an
// ApiCallScope it also takes a hold for the rest of the call.
ncclResult_t lookupAndHold(const char* call, ncclComm* comm);

// Whether this thread's current API call holds `comm`.
bool threadHolds(const ncclComm* comm);

// ncclCommDestroy (abort = false) and ncclCommAbort (abort = true).
ncclResult_t closeComm(const char* call, ncclComm* comm, bool abort);

// Stops every other thread's use of `comm` (held by the caller): sets the abort flag, waits for
// the other holders to leave, closes the connections (peers waiting on this rank fail), clears
// the flag. The caller has already made the communicator refuse new work (state Revoked/Failed).
// ncclCommRevoke and ncclCommShrink(NCCL_SHRINK_ABORT).
ncclResult_t quiesceComm(const char* call, ncclComm* comm);

}  // namespace accl
