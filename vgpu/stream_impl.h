// The objects behind cudaStream_t, cudaEvent_t and a running capture, shared by streams.cc,
// events.cc and capture.cc. Internal to the stand-in.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "vgpu/streams.h"

namespace accl::vgpu {

struct Capture;

// One stream: work runs in order on its own worker thread. `enqueued` counts the work handed to
// it, `completed` the work that finished; a position p is done once completed >= p.
struct StreamImpl : std::enable_shared_from_this<StreamImpl> {
  int device = 0;
  unsigned flags = 0;      // cudaStreamNonBlocking or cudaStreamDefault
  int priority = 0;
  bool legacy = false;     // the device's legacy default stream
  uint64_t id = 0;         // cudaStreamGetId

  std::mutex mu;
  std::condition_variable cv;
  // What the worker still has to run, each with the positions of other streams it waits for.
  struct Item {
    Work work;
    std::vector<std::pair<std::shared_ptr<StreamImpl>, uint64_t>> waits;
  };
  std::deque<Item> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool stopping = false;
  std::thread worker;

  // Capture state (guarded by the capture registry's mutex, capture.cc).
  std::shared_ptr<Capture> capture;

  bool blocking() const { return !legacy && (flags & cudaStreamNonBlocking) == 0; }
  // Appends work; returns its position (completed >= position once it ran).
  uint64_t push(Item item);
  // Waits until completed >= position.
  void waitFor(uint64_t position);
  uint64_t enqueuedNow() {
    std::lock_guard<std::mutex> lock(mu);
    return enqueued;
  }
  bool idle() {
    std::lock_guard<std::mutex> lock(mu);
    return completed == enqueued;
  }
  void stop();  // drains, then ends the worker (joined unless called from the worker)

  void runWorkerEntry();  // the worker thread's body
};

using StreamPtr = std::shared_ptr<StreamImpl>;

// The stream a handle names: null/cudaStreamLegacy → the current device's legacy stream,
// cudaStreamPerThread → this thread's per-thread stream on the current device, else a created
// stream; null when the handle is not a live stream.
StreamPtr resolveStream(cudaStream_t handle);
// Every stream of `device` alive now (the legacy stream included).
std::vector<StreamPtr> deviceStreams(int device);
// Records `err` as the device's sticky error (the first one wins).
void setStickyError(int device, cudaError_t err);

// The object behind cudaEvent_t.
struct EventImpl {
  unsigned flags = 0;
  std::mutex mu;
  StreamPtr stream;        // where it was last recorded (null: never, or in a capture)
  uint64_t position = 0;   // the stream's position it waits for
  std::shared_ptr<Capture> capture;  // set when last recorded in a capture
  size_t captureNode = 0;             // the number of nodes the capture had then
  StreamImpl* captureStream = nullptr;
  double timeMs = 0;       // when the recorded position completed (timing events)
};

// A running capture (capture.cc).
struct Capture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  StreamImpl* origin = nullptr;
  std::vector<Work> nodes;
  bool invalidated = false;
  const char* invalidatedBy = nullptr;
  unsigned long long id = 0;
  // Streams that joined (origin included) and whether their last node has been joined back.
  std::vector<std::pair<StreamImpl*, bool>> joined;
};

// capture.cc: when `s` is capturing, appends `work` to its capture and returns true (*err:
// cudaErrorStreamCaptureInvalidated when that capture is already invalidated); false otherwise.
bool captureAppend(StreamImpl* s, Work& work, cudaError_t* err);
// streams.cc: hands work to a resolved stream after `waits` (legacy-stream rules applied).
cudaError_t submitTo(const StreamPtr& s, const char* call, Work work,
                     std::vector<std::pair<StreamPtr, uint64_t>> waits);
// streams.cc: waits until `s` ran everything handed to it so far.
cudaError_t drainStream(const StreamPtr& s, const char* call);
// capture.cc: an event recorded in a capturing stream / a wait on such an event.
bool captureRecordEvent(StreamImpl* s, EventImpl* e);
cudaError_t captureWaitEvent(StreamImpl* s, EventImpl* e, const char* call);
// capture.cc: whether `s` is capturing; invalidates its capture with `call` as the cause when
// `invalidate` (a synchronising call on a capturing stream).
bool streamCapturing(StreamImpl* s, const char* invalidateBy);
// capture.cc: true while any blocking stream of `device` is capturing (the legacy stream must not
// then take work that would depend on it).
bool deviceHasBlockingCapture(int device, const char* invalidateBy);

}  // namespace accl::vgpu
