// The process-wide queue of releases that wait for accl's kernels to end, and the launch
// accounting that says when they may run (deferred_free.h). Built only with CUDA.
#include "device/cuda/deferred_free.h"

#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "util/log.h"

namespace accl::cuda {
namespace {

constexpr size_t kWarnBytes = size_t{1} << 30;

struct Pending {
  const char* what;
  size_t bytes;
  std::function<void()> release;
};

// One per process. Its mutex is held while releases run, so no launch starts meanwhile (and the
// releases of two threads never interleave); it is never held while waiting for a kernel.
struct Registry {
  std::mutex mu;
  int enqueuing = 0;                  // LaunchMarks alive
  int graphHolds = 0;                 // communicators with captured launches
  std::vector<cudaEvent_t> running;   // completion events not yet seen complete nor reaped
  std::deque<Pending> queue;
  size_t queuedBytes = 0;
  bool warned = false;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: what is queued at exit is the OS's
  return *r;
}

void eraseOne(std::vector<cudaEvent_t>& v, cudaEvent_t e) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == e) {
      v[i] = v.back();
      v.pop_back();
      return;
    }
  }
}

// Why an accl kernel may be running now, or nullptr. Forgets the events that have completed.
const char* busyReason(Registry& r) {
  if (r.enqueuing > 0) return "a launch is being enqueued";
  if (r.graphHolds > 0) return "a communicator has launches captured in a CUDA graph";
  for (size_t i = 0; i < r.running.size();) {
    if (cudaEventQuery(r.running[i]) == cudaErrorNotReady) {
      ++i;
      continue;
    }
    r.running[i] = r.running.back();  // done, or failed: either way it runs no more
    r.running.pop_back();
  }
  return r.running.empty() ? nullptr : "accl kernels are running";
}

void runQueue(Registry& r) {
  if (r.queue.empty()) return;
  const size_t count = r.queue.size(), bytes = r.queuedBytes;
  while (!r.queue.empty()) {
    Pending p = std::move(r.queue.front());
    r.queue.pop_front();
    p.release();
  }
  r.queuedBytes = 0;
  ACCL_INFO(ACCL_LOG_ALLOC, "released %zu deferred allocation(s), %zu bytes: no accl kernel runs now", count, bytes);
}

}  // namespace

LaunchMark::LaunchMark() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ++r.enqueuing;
}

LaunchMark::~LaunchMark() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  --r.enqueuing;
  if (done_) r.running.push_back(done_);
}

void launchReaped(cudaEvent_t done) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  eraseOne(r.running, done);
}

void holdForGraphs() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ++r.graphHolds;
}

void dropGraphHold() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  --r.graphHolds;
}

void releaseWhenIdle(const char* what, size_t bytes, std::function<void()> release) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const char* why = busyReason(r);
  if (why == nullptr) {
    runQueue(r);  // the older ones first
    release();
    return;
  }
  r.queue.push_back(Pending{what, bytes, std::move(release)});
  r.queuedBytes += bytes;
  ACCL_INFO(ACCL_LOG_ALLOC,
            "deferring the release of %s (%zu bytes; %zu release(s), %zu bytes queued): %s, and CUDA's free would "
            "wait for them",
            what, bytes, r.queue.size(), r.queuedBytes, why);
  if (r.queuedBytes > kWarnBytes && !r.warned) {
    r.warned = true;
    ACCL_WARN("%zu bytes of released accl memory wait to be freed until no accl kernel of this process runs (%s); "
              "they are freed by the first release or communicator wait that finds none running",
              r.queuedBytes, why);
  }
}

void releaseDeferred() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.queue.empty() || busyReason(r) != nullptr) return;
  runQueue(r);
}

DeferredReleases deferredReleases() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return DeferredReleases{r.queue.size(), r.queuedBytes};
}

}  // namespace accl::cuda
