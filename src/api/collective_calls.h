// The bodies of the collective entry points, shared by the plain calls (collective_api.cc) and
// their nccl*Config variants (collective_config_api.cc). `name` is the API function, for
// messages; `config` NULL is the plain call, exactly; `stream` is the user's stream, carried to
// the backend (the host backend ignores it).
#pragma once

#include <cstddef>

#include "device/common/ids.h"
#include "nccl.h"

struct ncclComm;

namespace accl {

ncclResult_t collectiveCall(const char* name, FuncId func, const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t type, ncclRedOp_t op, int root, ncclComm* comm,
                            cudaStream_t stream, const ncclCollConfig_t* config);
// The send/recv compositions: one group of transfers each.
ncclResult_t alltoallCall(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                          ncclComm* comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t gatherCall(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                        int root, ncclComm* comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t scatterCall(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                         int root, ncclComm* comm, cudaStream_t stream, const ncclCollConfig_t* config);

}  // namespace accl
