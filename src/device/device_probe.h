// What the library needs to know about CUDA devices at communicator creation, independent of
// whether the build has CUDA: how many devices exist, which one is current, and the choice of
// backend (ACCL_BACKEND) for a new communicator.
#pragma once

#include "core/comm.h"
#include "nccl.h"

namespace accl {

// Number of visible CUDA devices; 0 when the build has no CUDA or the driver reports none.
int cudaDeviceCount();

// The calling thread's current CUDA device, or 0 when there is none.
int cudaCurrentDevice();

// Picks the backend for a new communicator from ACCL_BACKEND and the devices present.
ncclResult_t selectBackend(const char* call, Backend* out);

// The build's CUDA runtime version (0 without CUDA), for accl-info and the log banner.
int cudaRuntimeVersion();

}  // namespace accl
