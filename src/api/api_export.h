// How a public entry point is exported. Each NCCL function is defined once as pncclX (the
// profiling name) and exported as a weak alias ncclX, so a PMPI-style profiler can interpose
// ncclX and forward to pncclX, as NVIDIA's library allows. The version script (libnccl.map)
// keeps everything else local.
#pragma once

#include "nccl.h"

#define ACCL_EXPORT __attribute__((visibility("default")))

// Usage: ACCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) { ...body... }
#define ACCL_API(ret, name, ...)                                                  \
  extern "C" ACCL_EXPORT ret p##name(__VA_ARGS__);                                \
  extern "C" ACCL_EXPORT __attribute__((weak, alias("p" #name))) ret name(__VA_ARGS__); \
  extern "C" ACCL_EXPORT ret p##name(__VA_ARGS__)
