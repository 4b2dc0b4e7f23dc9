// Group semantics shared by communicator creation and (later) collectives: a thread-local group
// depth, the work deferred until the outermost ncclGroupEnd, and how deferred communicator jobs
// (init, split, shrink, finalize) run: inline for blocking communicators, on a background thread
// for nonblocking ones, and all at once (one thread each) at the end of a group, so that one
// thread can create the communicators of several ranks.
#pragma once

#include <functional>

#include "nccl.h"

struct ncclComm;

namespace accl {

// The work of a communicator job. It runs on an arbitrary thread and must watch the
// communicator's abort flag in every wait.
using CommJobFn = std::function<ncclResult_t()>;

// Schedules `fn` for `comm` (the communicator whose async result it settles):
//  - inside a group: queued until the outermost ncclGroupEnd; returns ncclSuccess, or
//    ncclInProgress for a nonblocking communicator;
//  - blocking communicator: runs now and returns its result;
//  - nonblocking communicator: starts a background thread and returns ncclInProgress.
// On completion comm->asyncResult is set, and comm->state becomes Failed on error.
ncclResult_t launchCommJob(ncclComm* comm, CommJobFn fn);

bool inGroup();
// Nesting depth of ncclGroupStart calls on this thread (0 outside a group).
int groupDepth();
void groupStart();

// Ends one level; at the outermost level runs everything deferred. `call` names the API
// function for error messages.
ncclResult_t groupEnd(const char* call);

// Latches an error raised by a call inside a group; the outermost groupEnd returns it.
void recordGroupError(ncclResult_t res);

}  // namespace accl
