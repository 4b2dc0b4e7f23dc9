// Collective, point-to-point and reduction-operator entry points. Each call becomes a task of
// the calling thread's group (core/engine/enqueue.h). AlltoAll, Gather and Scatter are groups of
// send/recv, as in NCCL. The bodies shared with the nccl*Config variants
// (collective_config_api.cc) are here too (api/collective_calls.h).
#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/collective_calls.h"
#include "api/enum_args.h"
#include "core/engine/coll_config.h"
#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "core/engine/enqueue.h"
#include "core/engine/group.h"
#include "device/common/dtypes.h"
#include "util/log.h"

namespace accl {
namespace {

ncclResult_t p2p(const char* name, bool isSend, const void* sendbuff, void* recvbuff, size_t count,
                 ncclDataType_t type, int peer, ncclComm* comm, cudaStream_t stream, const CollCallConfig& cfg) {
  P2pCall call{name, isSend, sendbuff, recvbuff, count, type, peer};
  call.minChannels = cfg.minChannels;
  call.maxChannels = cfg.maxChannels;
  call.stream = stream;
  call.profilerTag = cfg.profilerTag;
  return enqueueP2p(comm, call);
}

// Checks shared by the send/recv compositions before any part is queued, so a bad call (or a bad
// config) queues nothing.
ncclResult_t checkComposite(const char* name, ncclComm* comm, ncclDataType_t type, size_t count, int root,
                            bool rooted, const ncclCollConfig_t* config, CollCallConfig* cfg) {
  ACCL_CHECK(checkCommReady(name, comm));
  ACCL_CHECK(checkType(name, type));
  // The buffers hold nranks blocks of count elements: their byte size must exist.
  ACCL_CHECK(checkCount(name, count, static_cast<size_t>(comm->nranks), type));
  if (rooted && (root < 0 || root >= comm->nranks))
    return fail(ncclInvalidArgument, "%s: root %d is out of range [0, %d)", name, root, comm->nranks);
  if (config) ACCL_CHECK(resolveCollConfig(name, kFuncSendRecv, 0, config, comm, cfg));
  return ncclSuccess;
}

// Runs `body(cfg)` (which queues send/recv parts) as one group; errors inside latch as usual.
template <class Body>
ncclResult_t composite(const char* name, ncclComm* comm, ncclDataType_t type, size_t count, int root, bool rooted,
                       const ncclCollConfig_t* config, Body&& body) {
  CollCallConfig cfg;
  ncclResult_t res = checkComposite(name, comm, type, count, root, rooted, config, &cfg);
  if (res != ncclSuccess) {
    recordGroupError(res);
    return res;
  }
  if (cfg.given)
    ACCL_INFO(ACCL_LOG_COLL,
              "%s: count %zu datatype %d root %d comm %p [nranks=%d] config channels [%d, %d] profilerTag 0x%llx", name,
              count, static_cast<int>(type), root, static_cast<void*>(comm), comm->nranks, cfg.minChannels,
              cfg.maxChannels, static_cast<unsigned long long>(cfg.profilerTag));
  groupStart();
  res = body(cfg);
  ncclResult_t end = groupEnd(name);
  return res != ncclSuccess ? res : end;
}

const char* byteOffset(const void* p, size_t elems, ncclDataType_t type) {
  return static_cast<const char*>(p) + elems * dtypeSize(type);
}

}  // namespace

ncclResult_t collectiveCall(const char* name, FuncId func, const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t type, ncclRedOp_t op, int root, ncclComm* comm, cudaStream_t stream,
                            const ncclCollConfig_t* config) {
  return enqueueColl(comm, CollCall{name, func, sendbuff, recvbuff, count, type, op, root, config, stream});
}

ncclResult_t alltoallCall(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                          ncclComm* comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return composite(name, comm, type, count, 0, false, config, [&](const CollCallConfig& cfg) -> ncclResult_t {
    for (int r = 0; r < comm->nranks; ++r) {
      ACCL_CHECK(p2p(name, true, byteOffset(sendbuff, r * count, type), nullptr, count, type, r, comm, stream, cfg));
      ACCL_CHECK(p2p(name, false, nullptr, const_cast<char*>(byteOffset(recvbuff, r * count, type)), count, type, r,
                     comm, stream, cfg));
    }
    return ncclSuccess;
  });
}

ncclResult_t gatherCall(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                        int root, ncclComm* comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return composite(name, comm, type, count, root, true, config, [&](const CollCallConfig& cfg) -> ncclResult_t {
    if (comm->rank == root)
      for (int r = 0; r < comm->nranks; ++r)
        ACCL_CHECK(p2p(name, false, nullptr, const_cast<char*>(byteOffset(recvbuff, r * count, type)), count, type,
                       r, comm, stream, cfg));
    return p2p(name, true, sendbuff, nullptr, count, type, root, comm, stream, cfg);
  });
}

ncclResult_t scatterCall(const char* name, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                         int root, ncclComm* comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return composite(name, comm, type, count, root, true, config, [&](const CollCallConfig& cfg) -> ncclResult_t {
    if (comm->rank == root)
      for (int r = 0; r < comm->nranks; ++r)
        ACCL_CHECK(p2p(name, true, byteOffset(sendbuff, r * count, type), nullptr, count, type, r, comm, stream, cfg));
    return p2p(name, false, nullptr, recvbuff, count, type, root, comm, stream, cfg);
  });
}

}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllReduce", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclAllReduce", datatype));
    ACCL_CHECK(checkRedOpArg("ncclAllReduce", op));
    return collectiveCall("ncclAllReduce", kFuncAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream,
                          nullptr);
  });
}

ACCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduce", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclReduce", datatype));
    ACCL_CHECK(checkRedOpArg("ncclReduce", op));
    return collectiveCall("ncclReduce", kFuncReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                          nullptr);
  });
}

ACCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclBcast", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclBcast", datatype));
    return collectiveCall("ncclBcast", kFuncBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream,
                          nullptr);
  });
}

ACCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBroadcast", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclBroadcast", datatype));
    return collectiveCall("ncclBroadcast", kFuncBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
                          stream, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduceScatter", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclReduceScatter", datatype));
    ACCL_CHECK(checkRedOpArg("ncclReduceScatter", op));
    return collectiveCall("ncclReduceScatter", kFuncReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0,
                          comm, stream, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllGather", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclAllGather", datatype));
    return collectiveCall("ncclAllGather", kFuncAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm,
                          stream, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclSend", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclSend", datatype));
    return p2p("ncclSend", true, sendbuff, nullptr, count, datatype, peer, comm, stream, CollCallConfig{});
  });
}

ACCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclRecv", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclRecv", datatype));
    return p2p("ncclRecv", false, nullptr, recvbuff, count, datatype, peer, comm, stream, CollCallConfig{});
  });
}

ACCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAlltoAll", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclAlltoAll", datatype));
    return alltoallCall("ncclAlltoAll", sendbuff, recvbuff, count, datatype, comm, stream, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclGather", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclGather", datatype));
    return gatherCall("ncclGather", sendbuff, recvbuff, count, datatype, root, comm, stream, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclScatter", [&]() -> ncclResult_t {
    ACCL_CHECK(checkDatatypeArg("ncclScatter", datatype));
    return scatterCall("ncclScatter", sendbuff, recvbuff, count, datatype, root, comm, stream, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiGuard("ncclRedOpCreatePreMulSum", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclRedOpCreatePreMulSum", comm));
    ACCL_CHECK(checkDatatypeArg("ncclRedOpCreatePreMulSum", datatype));
    const int where = enumBits(residence);
    if (where != ncclScalarDevice && where != ncclScalarHostImmediate)
      return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid scalar residence %d (expected %d or %d)",
                  where, static_cast<int>(ncclScalarDevice), static_cast<int>(ncclScalarHostImmediate));
    return comm->engine->redOps.createPreMulSum(op, scalar, datatype, residence);
  });
}

ACCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return apiGuard("ncclRedOpDestroy", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclRedOpDestroy", comm));
    const int value = enumBits(op);
    if (value < 0) return fail(ncclInvalidArgument, "ncclRedOpDestroy: operator %d is not a valid handle", value);
    if (!comm->engine)
      return fail(ncclInvalidArgument, "ncclRedOpDestroy: comm %p has not finished initializing", (void*)comm);
    return comm->engine->redOps.destroy(op);
  });
}
