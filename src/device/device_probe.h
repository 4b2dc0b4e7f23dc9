// What the library needs to know about CUDA devices at communicator creation, independent of
// whether the build has CUDA: how many devices exist, which one is current, and the choice of
// backend (ACCL_BACKEND) for a new communicator.
#pragma once

#include <cstdint>
#include <string>

#include "device/backend_kind.h"
#include "nccl.h"

namespace accl {

// Number of visible CUDA devices; 0 when the build has no CUDA or the driver reports none.
int cudaDeviceCount();

// The calling thread's current CUDA device, or 0 when there is none.
int cudaCurrentDevice();

// Picks the backend for a new communicator from ACCL_BACKEND and the devices present, logging
// (INFO, once per process) when a CUDA build falls back to the host backend for want of a GPU.
ncclResult_t selectBackend(const char* call, Backend* out);

// The decision behind selectBackend, free of the environment and the driver: `want` is
// ACCL_BACKEND ("" or "auto": cuda when this is a CUDA build (`cudaBuild`) and `gpus` > 0, else
// host; "host"; "cuda": an error without a GPU), and *note gets the fallback line to log (empty
// when there is nothing to say).
ncclResult_t chooseBackend(const char* call, const std::string& want, bool cudaBuild, int gpus, Backend* out,
                           std::string* note);

// The PCI bus id of device `dev` as a number (its hex digits: "0000:18:00.0" -> 0x1800), the same
// value on every process of the machine whatever CUDA_VISIBLE_DEVICES says; -1 without one.
int64_t cudaDeviceBusId(int dev);

// The build's CUDA runtime version (0 without CUDA), for accl-info and the log banner.
int cudaRuntimeVersion();

}  // namespace accl
