// The nccl*Config collectives (NCCL 2.32): each collective with a trailing per-call
// ncclCollConfig_t. config NULL is the plain call, exactly; otherwise the config is read and
// validated before anything is queued (core/engine/coll_config.h says what each field means on accl).
// There is no ncclBcastConfig: NCCL has none (ncclBroadcastConfig with sendbuff == recvbuff).
#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/collective_calls.h"
#include "api/enum_args.h"

using namespace accl;

ACCL_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return apiGuard("ncclAllReduceConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclAllReduceConfig", datatype));
    ACCL_CHECK(checkRedOpArg("ncclAllReduceConfig", op));
    return collectiveCall("ncclAllReduceConfig", kFuncAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm,
                          stream, config);
  });
}

ACCL_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return apiGuard("ncclBroadcastConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclBroadcastConfig", datatype));
    return collectiveCall("ncclBroadcastConfig", kFuncBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root,
                          comm, stream, config);
  });
}

ACCL_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return apiGuard("ncclReduceConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclReduceConfig", datatype));
    ACCL_CHECK(checkRedOpArg("ncclReduceConfig", op));
    return collectiveCall("ncclReduceConfig", kFuncReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                          config);
  });
}

ACCL_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return apiGuard("ncclAllGatherConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclAllGatherConfig", datatype));
    return collectiveCall("ncclAllGatherConfig", kFuncAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0,
                          comm, stream, config);
  });
}

ACCL_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return apiGuard("ncclReduceScatterConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclReduceScatterConfig", datatype));
    ACCL_CHECK(checkRedOpArg("ncclReduceScatterConfig", op));
    return collectiveCall("ncclReduceScatterConfig", kFuncReduceScatter, sendbuff, recvbuff, recvcount, datatype, op,
                          0, comm, stream, config);
  });
}

ACCL_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return apiGuard("ncclAlltoAllConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclAlltoAllConfig", datatype));
    return alltoallCall("ncclAlltoAllConfig", sendbuff, recvbuff, count, datatype, comm, stream, config);
  });
}

ACCL_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return apiGuard("ncclGatherConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclGatherConfig", datatype));
    return gatherCall("ncclGatherConfig", sendbuff, recvbuff, count, datatype, root, comm, stream, config);
  });
}

ACCL_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return apiGuard("ncclScatterConfig", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclScatterConfig", datatype));
    return scatterCall("ncclScatterConfig", sendbuff, recvbuff, count, datatype, root, comm, stream, config);
  });
}
