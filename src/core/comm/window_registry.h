// The memory windows registered with ncclCommWindowRegister and not yet deregistered: one
// process-wide table, so a handle that was freed, forged or registered with another
// communicator is recognised without dereferencing it. The public ncclWindow_t points to a
// ncclWindow_vidmem; callers outside this table only ever see copies (WindowInfo).
#pragma once

#include <cstddef>

#include "nccl.h"

struct ncclWindow_vidmem {
  ncclComm* comm;
  void* buff;
  size_t size;
  int flags;
};

namespace accl {

using WindowInfo = ncclWindow_vidmem;  // a copy of a live window's registration

// Records a new window of comm over [buff, buff + size).
ncclWindow_t registerWindow(ncclComm* comm, void* buff, size_t size, int flags);

// Forgets win if it is live and belongs to comm; otherwise ncclInvalidArgument naming `call`,
// the handle and the reason (never registered / already deregistered, or another comm's).
ncclResult_t deregisterWindow(const char* call, ncclComm* comm, ncclWindow_t win);

// Copies win's registration into *out under the same conditions (for ncclWinGetUserPtr and the
// device-pointer calls).
ncclResult_t lookupWindow(const char* call, ncclComm* comm, ncclWindow_t win, WindowInfo* out);

// Whether [ptr, ptr + bytes) lies inside one live window of comm (bytes 0: ptr inside one); *out
// (optional) gets a copy. For a backend's zero-copy / symmetric paths; absent, it stages.
bool findWindowCovering(ncclComm* comm, const void* ptr, size_t bytes, WindowInfo* out);

// How many windows comm has registered and not deregistered.
size_t liveWindowCount(ncclComm* comm);

// Forgets every window of comm (for communicator teardown: windows the user never deregistered
// would otherwise outlive it); returns how many there were.
size_t releaseWindowsOf(ncclComm* comm);

}  // namespace accl
