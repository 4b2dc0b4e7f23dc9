// Streams: a worker thread per stream runs its work in order; the legacy default stream of each
// device waits for the blocking streams' earlier work and they wait for its earlier work (CUDA's
// implicit synchronisation); non-blocking streams order only against what they are told to wait
// for. Also stream and device synchronisation, host callbacks and the device's sticky error.
#include <atomic>
#include <chrono>
#include <map>

#include <unistd.h>

#include "vgpu/api.h"
#include "vgpu/stream_impl.h"

namespace accl::vgpu {
namespace {

std::mutex gMu;  // guards the tables below
std::map<StreamImpl*, StreamPtr>& liveStreams() {
  static auto* m = new std::map<StreamImpl*, StreamPtr>;
  return *m;
}
std::map<int, StreamPtr>& legacyStreams() {
  static auto* m = new std::map<int, StreamPtr>;
  return *m;
}
std::atomic<uint64_t> gNextStreamId{1};
// The process that made the first stream: a child forked after that has none of the workers (fork
// copies one thread), and CUDA itself does not survive a fork once used.
std::atomic<pid_t> gStreamsPid{0};

bool forkedAfterUse() {
  const pid_t owner = gStreamsPid.load();
  if (owner == 0 || owner == getpid()) return false;
  static std::once_flag said;
  std::call_once(said, [] {
    logLine("this process was forked after its parent used CUDA streams; as with CUDA, the child cannot use "
            "them (calls fail with cudaErrorInitializationError)");
  });
  return true;
}
std::atomic<int> gSticky[16];

StreamPtr makeStream(int device, unsigned flags, int priority, bool legacy) {
  pid_t none = 0;
  gStreamsPid.compare_exchange_strong(none, getpid());
  auto s = std::make_shared<StreamImpl>();
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  s->legacy = legacy;
  s->id = gNextStreamId++;
  StreamImpl* raw = s.get();
  s->worker = std::thread([raw] { raw->runWorkerEntry(); });
  return s;
}

StreamPtr legacyStream(int device) {
  std::lock_guard<std::mutex> lock(gMu);
  StreamPtr& s = legacyStreams()[device];
  if (!s) {
    s = makeStream(device, 0, 0, true);
    liveStreams()[s.get()] = s;
  }
  return s;
}

// The calling thread's per-thread default streams, one per device, ended with the thread.
struct PerThreadStreams {
  std::map<int, StreamPtr> byDevice;
  ~PerThreadStreams() {
    for (auto& [dev, s] : byDevice) {
      {
        std::lock_guard<std::mutex> lock(gMu);
        liveStreams().erase(s.get());
      }
      s->stop();
    }
  }
};
thread_local PerThreadStreams tPerThread;

StreamPtr perThreadStream(int device) {
  StreamPtr& s = tPerThread.byDevice[device];
  if (!s) {
    s = makeStream(device, 0, 0, false);
    std::lock_guard<std::mutex> lock(gMu);
    liveStreams()[s.get()] = s;
  }
  return s;
}

cudaError_t createStream(cudaStream_t* out, unsigned flags, int priority, const char* call) {
  if (out == nullptr) return failCall(call, cudaErrorInvalidValue, "null stream pointer");
  if ((flags & ~unsigned(cudaStreamNonBlocking)) != 0) return failCall(call, cudaErrorInvalidValue, "flags 0x%x", flags);
  if (deviceCount() == 0) return setError(cudaErrorNoDevice);
  try {
    StreamPtr s = makeStream(currentDevice(), flags, priority, false);
    std::lock_guard<std::mutex> lock(gMu);
    liveStreams()[s.get()] = s;
    *out = reinterpret_cast<cudaStream_t>(s.get());
  } catch (const std::exception&) {
    return failCall(call, cudaErrorMemoryAllocation, "cannot start the stream's worker thread");
  }
  return cudaSuccess;
}

// Work that has to wait for the positions `waits` before it runs.
using Waits = std::vector<std::pair<StreamPtr, uint64_t>>;

}  // namespace

uint64_t StreamImpl::push(Item item) {
  std::lock_guard<std::mutex> lock(mu);
  queue.push_back(std::move(item));
  cv.notify_all();
  return ++enqueued;
}

void StreamImpl::waitFor(uint64_t position) {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return completed >= position; });
}

void StreamImpl::stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
    cv.notify_all();
  }
  if (worker.joinable()) {
    if (worker.get_id() == std::this_thread::get_id()) worker.detach();
    else worker.join();
  }
}

void StreamImpl::runWorkerEntry() {
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return !queue.empty() || stopping; });
    if (queue.empty()) return;
    Item& item = queue.front();  // deque: push_back leaves references to other elements valid
    lock.unlock();
    for (auto& [other, position] : item.waits) other->waitFor(position);
    item.waits.clear();
    // A faulted device runs nothing more, as a faulted context launches nothing more.
    if (deviceStickyError(device) == cudaSuccess && item.work.run) {
      const cudaError_t err = item.work.run();
      if (err != cudaSuccess) setStickyError(device, err);
    }
    lock.lock();
    queue.pop_front();
    ++completed;
    cv.notify_all();
  }
}

StreamPtr resolveStream(cudaStream_t handle) {
  if (deviceCount() == 0 || forkedAfterUse()) return nullptr;
  if (handle == nullptr || handle == cudaStreamLegacy) return legacyStream(currentDevice());
  if (handle == cudaStreamPerThread) return perThreadStream(currentDevice());
  std::lock_guard<std::mutex> lock(gMu);
  auto it = liveStreams().find(reinterpret_cast<StreamImpl*>(handle));
  return it == liveStreams().end() ? nullptr : it->second;
}

std::vector<StreamPtr> deviceStreams(int device) {
  std::vector<StreamPtr> out;
  std::lock_guard<std::mutex> lock(gMu);
  for (auto& [raw, s] : liveStreams())
    if (s->device == device) out.push_back(s);
  return out;
}

void setStickyError(int device, cudaError_t err) {
  if (device < 0 || device >= 16) return;
  int expected = cudaSuccess;
  if (gSticky[device].compare_exchange_strong(expected, int(err)))
    logLine("device %d: %s (%s); the device's context is now unusable, as after a GPU fault", device,
            cudaGetErrorString(err), cudaGetErrorName(err));
}

cudaError_t deviceStickyError(int device) {
  return device >= 0 && device < 16 ? cudaError_t(gSticky[device].load()) : cudaSuccess;
}

int streamDevice(cudaStream_t handle) {
  StreamPtr s = resolveStream(handle);
  return s ? s->device : -1;
}

// Hands work to a resolved stream with extra waits, applying the legacy stream's rules.
cudaError_t submitTo(const StreamPtr& s, const char* call, Work work, Waits waits) {
  if (const cudaError_t sticky = deviceStickyError(s->device)) return setError(sticky);
  cudaError_t captureErr = cudaSuccess;
  if (captureAppend(s.get(), work, &captureErr)) return setError(captureErr);
  StreamImpl::Item item{std::move(work), std::move(waits)};
  if (s->legacy) {
    if (deviceHasBlockingCapture(s->device, call))
      return failCall(call, cudaErrorStreamCaptureImplicit,
                      "work on the legacy stream would wait for a blocking stream that is capturing");
    for (const StreamPtr& o : deviceStreams(s->device))
      if (o != s && o->blocking()) item.waits.emplace_back(o, o->enqueuedNow());
  } else if (s->blocking()) {
    StreamPtr legacy = legacyStream(s->device);
    item.waits.emplace_back(legacy, legacy->enqueuedNow());
  }
  s->push(std::move(item));
  return cudaSuccess;
}

cudaError_t submit(cudaStream_t handle, const char* call, Work work) {
  StreamPtr s = resolveStream(handle);
  if (!s && forkedAfterUse()) return failCall(call, cudaErrorInitializationError, "CUDA was used before fork");
  if (!s) return failCall(call, cudaErrorInvalidResourceHandle, "stream %p is not a live stream", (void*)handle);
  return submitTo(s, call, std::move(work), {});
}

// Waits until `s` ran everything handed to it so far (the legacy stream: also what it implicitly
// waits for).
cudaError_t drainStream(const StreamPtr& s, const char* call) {
  if (s->legacy) {
    const cudaError_t e = submitTo(s, call, Work{call, nullptr}, {});
    if (e != cudaSuccess) return e;
  }
  s->waitFor(s->enqueuedNow());
  return setError(deviceStickyError(s->device));
}

void syncDeviceImplicit(int device) {
  if (forkedAfterUse()) return;  // nothing of the parent's runs here
  for (const StreamPtr& s : deviceStreams(device)) s->waitFor(s->enqueuedNow());
}

}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaStreamCreate(cudaStream_t* s) { return createStream(s, 0, 0, "cudaStreamCreate"); }
VGPU_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  return createStream(s, flags, 0, "cudaStreamCreateWithFlags");
}
VGPU_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  return createStream(s, flags, priority, "cudaStreamCreateWithPriority");
}

VGPU_API cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread)
    return failCall("cudaStreamDestroy", cudaErrorInvalidResourceHandle, "the default streams cannot be destroyed");
  StreamPtr s;
  {
    std::lock_guard<std::mutex> lock(gMu);
    auto it = liveStreams().find(reinterpret_cast<StreamImpl*>(handle));
    if (it == liveStreams().end())
      return failCall("cudaStreamDestroy", cudaErrorInvalidResourceHandle, "stream %p is not a live stream", (void*)handle);
    s = it->second;
    liveStreams().erase(it);
  }
  if (streamCapturing(s.get(), "cudaStreamDestroy")) {
    std::lock_guard<std::mutex> lock(gMu);
    liveStreams()[s.get()] = s;
    return failCall("cudaStreamDestroy", cudaErrorStreamCaptureUnsupported, "the stream is capturing");
  }
  // CUDA returns at once and frees the stream when its work is done: the worker drains first.
  std::thread([s] { s->stop(); }).detach();
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  StreamPtr s = resolveStream(handle);
  if (!s) return failCall("cudaStreamSynchronize", cudaErrorInvalidResourceHandle, "stream %p", (void*)handle);
  if (streamCapturing(s.get(), "cudaStreamSynchronize"))
    return failCall("cudaStreamSynchronize", cudaErrorStreamCaptureUnsupported, "the stream is capturing");
  if (s->legacy)
    if (cudaError_t e = checkCaptureForbidden("cudaStreamSynchronize")) return e;
  return drainStream(s, "cudaStreamSynchronize");
}

VGPU_API cudaError_t cudaStreamQuery(cudaStream_t handle) {
  StreamPtr s = resolveStream(handle);
  if (!s) return failCall("cudaStreamQuery", cudaErrorInvalidResourceHandle, "stream %p", (void*)handle);
  if (streamCapturing(s.get(), "cudaStreamQuery"))
    return failCall("cudaStreamQuery", cudaErrorStreamCaptureUnsupported, "the stream is capturing");
  if (const cudaError_t sticky = deviceStickyError(s->device)) return setError(sticky);
  return s->idle() ? cudaSuccess : cudaErrorNotReady;  // not-ready is not an error CUDA records
}

VGPU_API cudaError_t cudaDeviceSynchronize() {
  if (cudaError_t e = checkCaptureForbidden("cudaDeviceSynchronize")) return e;
  if (deviceCount() == 0) return setError(cudaErrorNoDevice);
  syncDeviceImplicit(currentDevice());
  return setError(deviceStickyError(currentDevice()));
}

VGPU_API cudaError_t cudaDeviceReset() {
  if (cudaError_t e = checkCaptureForbidden("cudaDeviceReset")) return e;
  syncDeviceImplicit(currentDevice());
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamGetFlags(cudaStream_t handle, unsigned int* flags) {
  StreamPtr s = resolveStream(handle);
  if (!s || flags == nullptr) return setError(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  *flags = s->flags;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamGetPriority(cudaStream_t handle, int* priority) {
  StreamPtr s = resolveStream(handle);
  if (!s || priority == nullptr) return setError(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  *priority = s->priority;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamGetDevice(cudaStream_t handle, int* device) {
  StreamPtr s = resolveStream(handle);
  if (!s || device == nullptr) return setError(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  *device = s->device;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamGetId(cudaStream_t handle, unsigned long long* id) {
  StreamPtr s = resolveStream(handle);
  if (!s || id == nullptr) return setError(s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  *id = s->id;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return failCall("cudaLaunchHostFunc", cudaErrorInvalidValue, "null function");
  return submit(stream, "cudaLaunchHostFunc", Work{"cudaLaunchHostFunc", [fn, userData] {
                                                     fn(userData);
                                                     return cudaSuccess;
                                                   }});
}

VGPU_API cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t cb, void* userData,
                                           unsigned int flags) {
  if (cb == nullptr || flags != 0) return failCall("cudaStreamAddCallback", cudaErrorInvalidValue, "callback or flags");
  return submit(stream, "cudaStreamAddCallback", Work{"cudaStreamAddCallback", [cb, stream, userData] {
                                                        cb(stream, cudaSuccess, userData);
                                                        return cudaSuccess;
                                                      }});
}
