// The backend factory: which CommBackend a communicator gets for its kind (core/engine/backend.h
// declares createBackend; core names no concrete backend, this file does).
#include <atomic>

#include "backend/host/host_backend.h"
#include "core/engine/backend.h"
#include "util/log.h"
#if defined(ACCL_HAVE_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace accl {

ncclResult_t createBackend(Backend kind, EngineView view, std::unique_ptr<CommBackend>* out) {
  switch (kind) {
    case Backend::Host:
      break;
    case Backend::Cuda: {
#if defined(ACCL_HAVE_CUDA)
      *out = std::make_unique<CudaBackend>(view);  // the device probe saw a GPU (else the kind is Host)
      return ncclSuccess;
#else
      // A build without CUDA has no CUDA backend: the host backend runs the collectives.
      static std::atomic<bool> noted{false};
      if (!noted.exchange(true))
        ACCL_INFO(ACCL_LOG_INIT, "comm %p: this build has no CUDA backend; collectives run on the host backend",
                  view.facts().comm);
      break;
#endif
    }
  }
  *out = std::make_unique<HostBackend>(view);
  return ncclSuccess;
}

}  // namespace accl
