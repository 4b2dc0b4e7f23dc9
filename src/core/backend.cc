// The backend factory: which CommBackend a communicator gets for its kind (see backend.h).
#include "core/backend.h"

#include <atomic>

#include "core/comm.h"
#include "util/log.h"

namespace accl {

ncclResult_t createHostBackend(ncclComm* comm, CommEngine* engine, std::unique_ptr<CommBackend>* out);  // backend/host
#if defined(ACCL_HAVE_CUDA)
ncclResult_t createCudaBackend(ncclComm* comm, CommEngine* engine, std::unique_ptr<CommBackend>* out);  // backend/cuda
#endif

ncclResult_t createBackend(ncclComm* comm, CommEngine* engine, std::unique_ptr<CommBackend>* out) {
  switch (comm->backend) {
    case Backend::Host:
      return createHostBackend(comm, engine, out);
    case Backend::Cuda: {
#if defined(ACCL_HAVE_CUDA)
      return createCudaBackend(comm, engine, out);  // the device probe saw a GPU (else comm->backend is Host)
#else
      // A build without CUDA has no CUDA backend: the host backend runs the collectives.
      static std::atomic<bool> noted{false};
      if (!noted.exchange(true))
        ACCL_INFO(ACCL_LOG_INIT, "comm %p: this build has no CUDA backend; collectives run on the host backend",
                  static_cast<void*>(comm));
      return createHostBackend(comm, engine, out);
#endif
    }
  }
  return createHostBackend(comm, engine, out);
}

}  // namespace accl
