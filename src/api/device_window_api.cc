// Host queries of NCCL's device API that turn a window into something a kernel can address:
// device pointers into the window of an LSA (load/store-accessible) peer, of any peer, or of the
// multicast (NVLS) mapping, and the CFT fabric "LE" ids and offsets (nccl_device/host.h, 2.29+).
//
// All of them need a window that is mapped on the device of every peer; accl's windows are
// host-backend registrations of a local buffer, with no peer or multicast mapping. So after the
// arguments are checked (a NULL window or output pointer, a negative rank, a NULL multicast
// handle are ncclInvalidArgument) each call returns ncclInvalidUsage with a message naming it.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/device_api_types.h"
#include "api/gpu_only.h"

using namespace accl;

namespace accl {
namespace {

ncclResult_t checkWindowAndOut(const char* call, ncclWindow_t window, const void* out, const char* outName) {
  if (window == nullptr) return fail(ncclInvalidArgument, "%s: window is NULL", call);
  if (out == nullptr) return fail(ncclInvalidArgument, "%s: %s is NULL", call, outName);
  return ncclSuccess;
}

ncclResult_t checkLeOutputs(const char* call, ncclWindow_t window, ncclCftLeId* leId, size_t* leOffset) {
  ACCL_CHECK(checkWindowAndOut(call, window, leId, "leId"));
  if (leOffset == nullptr) return fail(ncclInvalidArgument, "%s: leOffset is NULL", call);
  *leId = 0;
  *leOffset = 0;
  return ncclSuccess;
}

constexpr const char* kPeerMapping = "device pointers into a peer's window need";
constexpr const char* kMulticastMapping = "multicast (NVLS) pointers into a window need";
constexpr const char* kCftMapping = "CFT fabric addressing of a window needs";

}  // namespace
}  // namespace accl

ACCL_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset, void** outPtr) {
  return apiGuard("ncclGetLsaMultimemDevicePointer", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkWindowAndOut("ncclGetLsaMultimemDevicePointer", window, outPtr, "outPtr"));
    *outPtr = nullptr;
    return refuseGpuOnly("ncclGetLsaMultimemDevicePointer", kMulticastMapping, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset, ncclMultimemHandle_t multimem,
         void** outPtr) {
  return apiGuard("ncclGetMultimemDevicePointer", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkWindowAndOut("ncclGetMultimemDevicePointer", window, outPtr, "outPtr"));
    *outPtr = nullptr;
    if (multimem.mcBasePtr == nullptr)
      return fail(ncclInvalidArgument, "ncclGetMultimemDevicePointer: multimem.mcBasePtr is NULL");
    return refuseGpuOnly("ncclGetMultimemDevicePointer", kMulticastMapping, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank, void** outPtr) {
  return apiGuard("ncclGetLsaDevicePointer", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkWindowAndOut("ncclGetLsaDevicePointer", window, outPtr, "outPtr"));
    *outPtr = nullptr;
    if (lsaRank < 0) return fail(ncclInvalidArgument, "ncclGetLsaDevicePointer: lsaRank %d is negative", lsaRank);
    return refuseGpuOnly("ncclGetLsaDevicePointer", kPeerMapping, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer, void** outPtr) {
  return apiGuard("ncclGetPeerDevicePointer", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkWindowAndOut("ncclGetPeerDevicePointer", window, outPtr, "outPtr"));
    *outPtr = nullptr;
    if (peer < 0) return fail(ncclInvalidArgument, "ncclGetPeerDevicePointer: peer %d is negative", peer);
    return refuseGpuOnly("ncclGetPeerDevicePointer", kPeerMapping, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGetMultimemDeviceLeInfo, ncclWindow_t window, size_t offset, ncclCftLeId* leId,
         size_t* leOffset) {
  return apiGuard("ncclGetMultimemDeviceLeInfo", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkLeOutputs("ncclGetMultimemDeviceLeInfo", window, leId, leOffset));
    return refuseGpuOnly("ncclGetMultimemDeviceLeInfo", kCftMapping, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGetCftDeviceLeInfo, ncclWindow_t window, size_t offset, int peerCft, ncclTeam_t cftTeam,
         ncclCftLeId* leId, size_t* leOffset) {
  return apiGuard("ncclGetCftDeviceLeInfo", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkLeOutputs("ncclGetCftDeviceLeInfo", window, leId, leOffset));
    if (peerCft < 0 || peerCft >= cftTeam.nRanks)
      return fail(ncclInvalidArgument, "ncclGetCftDeviceLeInfo: peerCft %d is not a member of cftTeam (nRanks %d)",
                  peerCft, cftTeam.nRanks);
    return refuseGpuOnly("ncclGetCftDeviceLeInfo", kCftMapping, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGetPeerDeviceLeInfo, ncclWindow_t window, size_t offset, int peerWorld, ncclCftLeId* leId,
         size_t* leOffset) {
  return apiGuard("ncclGetPeerDeviceLeInfo", [&]() -> ncclResult_t {
    (void)offset;
    ACCL_CHECK(checkLeOutputs("ncclGetPeerDeviceLeInfo", window, leId, leOffset));
    if (peerWorld < 0) return fail(ncclInvalidArgument, "ncclGetPeerDeviceLeInfo: peerWorld %d is negative", peerWorld);
    return refuseGpuOnly("ncclGetPeerDeviceLeInfo", kCftMapping, nullptr);
  });
}
