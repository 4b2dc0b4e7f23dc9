// What a device-API client compiled against NVIDIA's nccl_device headers sees, written out for
// the tests that call libnccl.so's device-API host functions: the types those functions take by
// value or fill in (layouts checked against NVIDIA's by device_api_nvidia_check.cc and
// device_api_layout.h), their declarations, and small helpers shared by the device-API tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nccl.h"

struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;
struct ncclMultimemHandle {
  void* mcBasePtr;
};
typedef uint32_t ncclCftLeId;
typedef enum { NCCL_CFT_TEAM_FLAT, NCCL_CFT_TEAM_HIER_MULTIMEM, NCCL_CFT_TEAM_HIER_LSA } ncclCftTeamMode_t;
typedef enum { NCCL_GIN_TYPE_NONE = 0, NCCL_GIN_MAX_TYPES = 6 } ncclGinType_t;
typedef enum { NCCL_GIN_CONNECTION_NONE = 0 } ncclGinConnectionType_t;
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
  uint64_t commHash;
  int ginMinStride;
  ncclGinConnectionType_t ginConnectionType;
  bool ginSupport[64];
  size_t devCommRuntimeVersionSize;
  bool cftSupport;
  bool cftMulticastSupport;
  bool cftCountedSupport;
} ncclCommProperties_t;
// NVIDIA's NCCL_COMM_PROPERTIES_INITIALIZER of 2.32.3.
#define ACCL_TEST_COMM_PROPERTIES_INITIALIZER \
  { sizeof(ncclCommProperties_t), 0xcafebeefu, 23203 }

#include "device_api_decls.h"
#include "device_api_layout.h"

namespace accl::abi {

// ncclCommInitAll's communicators for n ranks in this process, destroyed at scope exit.
struct LocalComms {
  std::vector<ncclComm_t> comms;
  explicit LocalComms(int n) : comms(n, nullptr) {
    EXPECT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  }
  ~LocalComms() {
    for (ncclComm_t c : comms)
      if (c != nullptr) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess) << ncclGetLastError(nullptr);
  }
  ncclComm_t operator[](int r) const { return comms[r]; }
};

// `res` is `code` and the last error names `call` (and contains `detail`, when given).
inline void expectFailure(ncclResult_t res, ncclResult_t code, const char* call, const char* detail = nullptr) {
  EXPECT_EQ(res, code) << call << " returned " << res << " (" << ncclGetErrorString(res) << ")";
  const char* msg = ncclGetLastError(nullptr);
  ASSERT_NE(msg, nullptr);
  EXPECT_NE(std::strstr(msg, call), nullptr) << "last error \"" << msg << "\" does not name " << call;
  if (detail != nullptr)
    EXPECT_NE(std::strstr(msg, detail), nullptr) << "last error \"" << msg << "\" does not say \"" << detail << "\"";
}

// Refused as GPU-only: ncclInvalidUsage, a message naming the call and saying what it needs.
inline void expectRefused(ncclResult_t res, const char* call, const char* detail = nullptr) {
  expectFailure(res, ncclInvalidUsage, call, detail);
}

inline void expectInvalidArgument(ncclResult_t res, const char* call, const char* detail = nullptr) {
  expectFailure(res, ncclInvalidArgument, call, detail);
}

}  // namespace accl::abi
