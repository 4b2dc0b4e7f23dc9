// The buffers registered with ncclCommRegister and not yet deregistered: one process-wide table,
// so a handle that was never issued, already deregistered, forged or issued to another
// communicator is recognised without dereferencing it (as window_registry.h does for windows).
// Handles are opaque serial numbers, never reused, so an old handle cannot alias a new one.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace accl {

// Records [buff, buff + size) for comm and returns its new handle.
void* registerBuffer(ncclComm* comm, void* buff, size_t size);

// Forgets `handle` if it is live and belongs to comm; otherwise ncclInvalidArgument naming `call`,
// the handle and the reason.
ncclResult_t deregisterBuffer(const char* call, ncclComm* comm, void* handle);

// A live registration, as a backend sees it when it looks for zero-copy.
struct RegisteredRange {
  void* buff;
  size_t size;
  void* handle;
};

// Whether [ptr, ptr + bytes) lies inside one live registration of comm (bytes 0: ptr inside one);
// *out (optional) gets it. A backend may then share the user's buffer with peers directly instead
// of staging it through a FIFO; without a registration it stages, which is always correct.
bool findRegisteredBuffer(ncclComm* comm, const void* ptr, size_t bytes, RegisteredRange* out);

// Live registrations of comm (tests, diagnostics).
size_t liveBufferCount(ncclComm* comm);

// Drops every registration of comm (its communicator is being freed); returns how many.
size_t releaseBuffersOf(ncclComm* comm);

}  // namespace accl
