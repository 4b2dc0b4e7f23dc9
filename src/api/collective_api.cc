// Collective, point-to-point and reduction-operator entry points. Each call becomes a task of
// the calling thread's group (core/enqueue.h). AlltoAll, Gather and Scatter are groups of
// send/recv, as in NCCL.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/enqueue.h"
#include "core/group.h"
#include "device/common/dtypes.h"

namespace accl {
namespace {

ncclResult_t coll(const char* name, FuncId func, const void* sendbuff, void* recvbuff, size_t count,
                  ncclDataType_t type, ncclRedOp_t op, int root, ncclComm* comm) {
  return enqueueColl(comm, CollCall{name, func, sendbuff, recvbuff, count, type, op, root});
}

ncclResult_t p2p(const char* name, bool isSend, const void* sendbuff, void* recvbuff, size_t count,
                 ncclDataType_t type, int peer, ncclComm* comm) {
  return enqueueP2p(comm, P2pCall{name, isSend, sendbuff, recvbuff, count, type, peer});
}

// Checks shared by the send/recv compositions before any part is queued, so a bad call queues
// nothing.
ncclResult_t checkComposite(const char* name, ncclComm* comm, ncclDataType_t type, size_t count, int root,
                            bool rooted) {
  ACCL_CHECK(checkCommReady(name, comm));
  ACCL_CHECK(checkType(name, type));
  // The buffers hold nranks blocks of count elements: their byte size must exist.
  ACCL_CHECK(checkCount(name, count, static_cast<size_t>(comm->nranks), type));
  if (rooted && (root < 0 || root >= comm->nranks))
    return fail(ncclInvalidArgument, "%s: root %d is out of range [0, %d)", name, root, comm->nranks);
  return ncclSuccess;
}

// Runs `body` (which queues send/recv parts) as one group; errors inside latch as usual.
template <class Body>
ncclResult_t composite(const char* name, ncclComm* comm, ncclDataType_t type, size_t count, int root, bool rooted,
                       Body&& body) {
  ncclResult_t res = checkComposite(name, comm, type, count, root, rooted);
  if (res != ncclSuccess) {
    recordGroupError(res);
    return res;
  }
  groupStart();
  res = body();
  ncclResult_t end = groupEnd(name);
  return res != ncclSuccess ? res : end;
}

const char* byteOffset(const void* p, size_t elems, ncclDataType_t type) {
  return static_cast<const char*>(p) + elems * dtypeSize(type);
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllReduce", [&] {
    return coll("ncclAllReduce", kFuncAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm);
  });
}

ACCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduce",
                  [&] { return coll("ncclReduce", kFuncReduce, sendbuff, recvbuff, count, datatype, op, root, comm); });
}

ACCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclBcast",
                  [&] { return coll("ncclBcast", kFuncBroadcast, buff, buff, count, datatype, ncclSum, root, comm); });
}

ACCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBroadcast", [&] {
    return coll("ncclBroadcast", kFuncBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm);
  });
}

ACCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduceScatter", [&] {
    return coll("ncclReduceScatter", kFuncReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm);
  });
}

ACCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllGather", [&] {
    return coll("ncclAllGather", kFuncAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm);
  });
}

ACCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclSend", [&] { return p2p("ncclSend", true, sendbuff, nullptr, count, datatype, peer, comm); });
}

ACCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclRecv", [&] { return p2p("ncclRecv", false, nullptr, recvbuff, count, datatype, peer, comm); });
}

ACCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAlltoAll", [&] {
    return composite("ncclAlltoAll", comm, datatype, count, 0, false, [&]() -> ncclResult_t {
      for (int r = 0; r < comm->nranks; ++r) {
        ACCL_CHECK(p2p("ncclAlltoAll", true, byteOffset(sendbuff, r * count, datatype), nullptr, count, datatype, r,
                       comm));
        ACCL_CHECK(p2p("ncclAlltoAll", false, nullptr,
                       const_cast<char*>(byteOffset(recvbuff, r * count, datatype)), count, datatype, r, comm));
      }
      return ncclSuccess;
    });
  });
}

ACCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclGather", [&] {
    return composite("ncclGather", comm, datatype, count, root, true, [&]() -> ncclResult_t {
      if (comm->rank == root)
        for (int r = 0; r < comm->nranks; ++r)
          ACCL_CHECK(p2p("ncclGather", false, nullptr, const_cast<char*>(byteOffset(recvbuff, r * count, datatype)),
                         count, datatype, r, comm));
      return p2p("ncclGather", true, sendbuff, nullptr, count, datatype, root, comm);
    });
  });
}

ACCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclScatter", [&] {
    return composite("ncclScatter", comm, datatype, count, root, true, [&]() -> ncclResult_t {
      if (comm->rank == root)
        for (int r = 0; r < comm->nranks; ++r)
          ACCL_CHECK(p2p("ncclScatter", true, byteOffset(sendbuff, r * count, datatype), nullptr, count, datatype, r,
                         comm));
      return p2p("ncclScatter", false, nullptr, recvbuff, count, datatype, root, comm);
    });
  });
}

ACCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiGuard("ncclRedOpCreatePreMulSum", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclRedOpCreatePreMulSum", comm));
    return comm->engine->redOps.createPreMulSum(op, scalar, datatype, residence);
  });
}

ACCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return apiGuard("ncclRedOpDestroy", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclRedOpDestroy", comm));
    if (!comm->engine)
      return fail(ncclInvalidArgument, "ncclRedOpDestroy: comm %p has not finished initializing", (void*)comm);
    return comm->engine->redOps.destroy(op);
  });
}
