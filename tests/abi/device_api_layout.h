// The recorded layout of NCCL 2.32.3's ncclCommProperties_t (nccl_device/host.h), the one device
// API struct that the library writes into: the offset of every field and the size. The includer
// defines ACCL_PROPS_TYPE and expands ACCL_ASSERT_COMM_PROPERTIES_LAYOUT(); device_api_test.cc
// does so for its client-side mirror, device_api_nvidia_check.cc for NVIDIA's own struct (and
// src/api/device_api_types.h pins the library's copy to the same numbers).
#pragma once

#include <cstddef>

#define ACCL_COMM_PROPERTIES_FIELDS(X) \
  X(size, 0)                           \
  X(magic, 8)                          \
  X(version, 12)                       \
  X(rank, 16)                          \
  X(nRanks, 20)                        \
  X(cudaDev, 24)                       \
  X(nvmlDev, 28)                       \
  X(deviceApiSupport, 32)              \
  X(multimemSupport, 33)               \
  X(ginType, 36)                       \
  X(nLsaTeams, 40)                     \
  X(hostRmaSupport, 44)                \
  X(railedGinType, 48)                 \
  X(commHash, 56)                      \
  X(ginMinStride, 64)                  \
  X(ginConnectionType, 68)             \
  X(ginSupport, 72)                    \
  X(devCommRuntimeVersionSize, 136)    \
  X(cftSupport, 144)                   \
  X(cftMulticastSupport, 145)          \
  X(cftCountedSupport, 146)
#define ACCL_COMM_PROPERTIES_SIZE 152

#define ACCL_ASSERT_PROPS_FIELD_(field, offset) \
  static_assert(offsetof(ACCL_PROPS_TYPE, field) == (offset), "ncclCommProperties_t::" #field " is not at " #offset);
#define ACCL_ASSERT_COMM_PROPERTIES_LAYOUT()                 \
  ACCL_COMM_PROPERTIES_FIELDS(ACCL_ASSERT_PROPS_FIELD_)      \
  static_assert(sizeof(ACCL_PROPS_TYPE) == ACCL_COMM_PROPERTIES_SIZE, "sizeof(ncclCommProperties_t) differs");
