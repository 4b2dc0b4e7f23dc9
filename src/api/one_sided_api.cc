// One-sided operations on registered windows (NCCL 2.29+): ncclPutSignal, ncclSignal and
// ncclWaitSignal. They are GPU-initiated RMA: the data and the signal are written into the
// peer's window by the device, and the wait spins on device memory. accl validates every argument
// the way NCCL does (bad values, and a window that is not one of the communicator's or too small
// for the write, are ncclInvalidArgument) and then refuses the call with ncclInvalidUsage: the
// host backend has no RMA path, and the CUDA backend does not implement signals yet.
// ncclWaitSignal with no descriptor has nothing to wait for and succeeds.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/enum_args.h"
#include "api/gpu_only.h"
#include "core/comm/comm.h"
#include "core/comm/window_registry.h"
#include "device/common/dtypes.h"

using namespace accl;

namespace accl {
namespace {

// Checks shared by the three calls: a ready communicator, a peer of it, signal and context ids
// that are not negative (NCCL currently allows only 0 for both; larger ids are left to the
// backend that implements them).
ncclResult_t checkSignalTarget(const char* call, ncclComm* comm, int peer, int sigIdx, int ctx) {
  ACCL_CHECK(checkCommReady(call, comm));
  if (peer < 0 || peer >= comm->nranks)
    return fail(ncclInvalidArgument, "%s: peer %d is not a rank of this communicator (nranks %d)", call, peer,
                comm->nranks);
  if (sigIdx < 0) return fail(ncclInvalidArgument, "%s: sigIdx %d is negative", call, sigIdx);
  if (ctx < 0) return fail(ncclInvalidArgument, "%s: ctx %d is negative", call, ctx);
  return ncclSuccess;
}

ncclResult_t checkNoFlags(const char* call, unsigned int flags) {
  if (flags != 0) return fail(ncclInvalidArgument, "%s: flags 0x%x must be 0 (reserved)", call, flags);
  return ncclSuccess;
}

}  // namespace
}  // namespace accl

ACCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclPutSignal", [&]() -> ncclResult_t {
    (void)stream;
    ACCL_CHECK(checkSignalTarget("ncclPutSignal", comm, peer, sigIdx, ctx));
    ACCL_CHECK(checkNoFlags("ncclPutSignal", flags));
    if (enumBits(datatype) < 0 || enumBits(datatype) >= ncclNumTypes)  // read as an int: see enum_args.h
      return fail(ncclInvalidArgument, "ncclPutSignal: datatype %d is not an ncclDataType_t", enumBits(datatype));
    if (localbuff == nullptr && count > 0)
      return fail(ncclInvalidArgument, "ncclPutSignal: localbuff is NULL (count %zu)", count);
    if (peerWin == nullptr) return fail(ncclInvalidArgument, "ncclPutSignal: peerWin is NULL");
    // peerWin is this rank's handle of a window every rank registered; the peer's part of it has
    // the same size, so the write must fit inside this one.
    WindowInfo win;
    ACCL_CHECK(lookupWindow("ncclPutSignal", comm, peerWin, &win));
    size_t bytes = count * dtypeSize(datatype);
    if (count != 0 && bytes / count != dtypeSize(datatype))
      return fail(ncclInvalidArgument, "ncclPutSignal: count %zu of datatype %d overflows size_t", count,
                  (int)datatype);
    if (peerWinOffset > win.size || bytes > win.size - peerWinOffset)
      return fail(ncclInvalidArgument,
                  "ncclPutSignal: %zu bytes at peerWinOffset %zu do not fit in the window of %zu bytes", bytes,
                  peerWinOffset, win.size);
    return refuseGpuOnly("ncclPutSignal", "one-sided put-with-signal into a peer's window needs", comm);
  });
}

ACCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclSignal", [&]() -> ncclResult_t {
    (void)stream;
    ACCL_CHECK(checkSignalTarget("ncclSignal", comm, peer, sigIdx, ctx));
    ACCL_CHECK(checkNoFlags("ncclSignal", flags));
    return refuseGpuOnly("ncclSignal", "one-sided signals need", comm);
  });
}

ACCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclWaitSignal", [&]() -> ncclResult_t {
    (void)stream;
    ACCL_CHECK(checkCommReady("ncclWaitSignal", comm));
    if (nDesc < 0) return fail(ncclInvalidArgument, "ncclWaitSignal: nDesc %d is negative", nDesc);
    if (nDesc == 0) return ncclSuccess;
    if (signalDescs == nullptr)
      return fail(ncclInvalidArgument, "ncclWaitSignal: signalDescs is NULL (nDesc %d)", nDesc);
    for (int i = 0; i < nDesc; ++i) {
      const ncclWaitSignalDesc_t& d = signalDescs[i];
      if (d.opCnt < 0)
        return fail(ncclInvalidArgument, "ncclWaitSignal: signalDescs[%d].opCnt %d is negative", i, d.opCnt);
      if (d.peer < 0 || d.peer >= comm->nranks)
        return fail(ncclInvalidArgument, "ncclWaitSignal: signalDescs[%d].peer %d is not a rank (nranks %d)", i, d.peer,
                    comm->nranks);
      if (d.sigIdx < 0)
        return fail(ncclInvalidArgument, "ncclWaitSignal: signalDescs[%d].sigIdx %d is negative", i, d.sigIdx);
      if (d.ctx < 0) return fail(ncclInvalidArgument, "ncclWaitSignal: signalDescs[%d].ctx %d is negative", i, d.ctx);
    }
    return refuseGpuOnly("ncclWaitSignal", "waiting for one-sided signals needs", comm);
  });
}
