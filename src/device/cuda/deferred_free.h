// Deferred release of memory whose CUDA free synchronises the device (issue 18 fault 5).
//
// cudaFreeHost, cudaFree, cudaHostUnregister, cudaIpcCloseMemHandle and cuMemUnmap wait for every
// kernel of the process on the device. accl runs several ranks per GPU, also as threads of one
// process, and their kernels wait for each other: if rank A's thread frees (destroying or
// suspending a communicator, a transport closing its FIFOs) while rank B's kernel runs and waits
// for the kernel A's thread would launch next, the free never returns. So every such free of accl
// goes through releaseWhenIdle: it runs at once when no accl kernel of the process may be
// running, otherwise it is queued and run by the first later release, or blocking wait of a
// backend, that finds none running.
//
// What "may be running" means: a launch between LaunchMark's construction and its completion
// event (polled with cudaEventQuery, never waited for), or any live communicator that has put a
// launch into a CUDA graph (holdForGraphs): the backend never sees a graph's replays, so such a
// communicator counts as running until it is destroyed. Launches are held back (LaunchMark
// waits) while queued releases run, so no accl kernel starts under a free's synchronisation.
//
// Memory growth: queued memory belongs to resources already released, and waits only while
// accl kernels keep running back to back or a graph-capturing communicator lives; one free seen
// idle runs the whole queue. Past 1 GiB queued, a warning says why once. What is still queued at
// process exit is left to the OS: no CUDA call runs from a static destructor.
// Built only with CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace accl::cuda {

// One kernel launch of accl, from before its enqueue until its completion event: counted as
// running from construction (which waits while queued releases run); after destruction the
// event given to completesWith, if any, says when it ends. A launch without an event (captured,
// or failed before its event was recorded) stops counting at destruction.
class LaunchMark {
 public:
  LaunchMark();
  ~LaunchMark();
  LaunchMark(const LaunchMark&) = delete;
  LaunchMark& operator=(const LaunchMark&) = delete;
  // `done` is recorded after the kernel; it must stay valid until launchReaped(done).
  void completesWith(cudaEvent_t done) { done_ = done; }

 private:
  cudaEvent_t done_ = nullptr;
};

// The owner of a completion event is done with it (before reusing or destroying it).
void launchReaped(cudaEvent_t done);

// A communicator put a launch into a CUDA graph: until dropGraphHold, replays may run at any time.
void holdForGraphs();
void dropGraphHold();

// Runs `release` (a free that synchronises the device) now if no accl kernel may be running,
// else queues it; `what` and `bytes` are for the log.
void releaseWhenIdle(const char* what, size_t bytes, std::function<void()> release);

// Runs the queued releases if no accl kernel may be running now (cheap when nothing is queued).
void releaseDeferred();

// Releases queued now and their bytes (tests, diagnostics).
struct DeferredReleases {
  size_t count = 0;
  size_t bytes = 0;
};
DeferredReleases deferredReleases();

}  // namespace accl::cuda
