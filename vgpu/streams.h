// The stream layer of the virtual GPU (streams.cc): how the other parts hand work to a stream.
// A stream is a worker thread that runs its work in order; the legacy default stream and the
// blocking streams of a device order against each other as CUDA documents; a stream under capture
// records the work into its capture instead (graphs.cc replays it).
#pragma once

#include <functional>

#include "vgpu/vgpu.h"

namespace accl::vgpu {

// One operation of a stream. `run` executes on the stream's worker (or on replay of a graph);
// an error it returns becomes the device's sticky error, as a failed kernel poisons a context.
struct Work {
  const char* what = "";  // the API call that made it, for messages
  std::function<cudaError_t()> run;
};

// Hands `work` to `stream` (null and cudaStreamLegacy: the current device's legacy stream;
// cudaStreamPerThread: the calling thread's per-thread stream), or appends it to the capture the
// stream belongs to. Errors (an unknown handle, an implicit dependency on a capturing stream) are
// recorded as the thread's last error under `call`.
cudaError_t submit(cudaStream_t stream, const char* call, Work work);

// The device a stream handle belongs to (the current device for the special handles), -1 when
// the handle is unknown.
int streamDevice(cudaStream_t stream);

// The first error a kernel of `device` ran into (cudaSuccess while none): later synchronising
// calls report it, as a real context does after a fault.
cudaError_t deviceStickyError(int device);

}  // namespace accl::vgpu
