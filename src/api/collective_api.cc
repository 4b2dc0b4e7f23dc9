// Collective, point-to-point and reduction-operator entry points. Until the collective engine
// lands (src/algos, src/core/enqueue) they validate their arguments like NCCL and then report
// that the operation is not supported yet, so a client gets a clear error instead of a crash.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/comm.h"
#include "core/group.h"

namespace accl {
namespace {

struct CollArgs {
  const char* call;
  const void* sendbuff;
  const void* recvbuff;
  size_t count;
  ncclDataType_t datatype;
  int op;    // -1 when the collective has no reduction
  int root;  // -1 when the collective has no root; for send/recv: the peer
  ncclComm* comm;
};

ncclResult_t checkCollArgs(const CollArgs& a) {
  ACCL_CHECK(checkCommReady(a.call, a.comm));
  if ((int)a.datatype < 0 || (int)a.datatype >= ncclNumTypes)
    return fail(ncclInvalidArgument, "%s: datatype %d is invalid (must be in [0, %d))", a.call, (int)a.datatype,
                (int)ncclNumTypes);
  if (a.op != -1 && (a.op < 0 || a.op >= ncclNumOps))
    return fail(ncclInvalidArgument, "%s: reduction op %d is invalid for comm %p", a.call, a.op, (void*)a.comm);
  if (a.root != -1 && (a.root < 0 || a.root >= a.comm->nranks))
    return fail(ncclInvalidArgument, "%s: root/peer %d is out of range [0, %d)", a.call, a.root, a.comm->nranks);
  if (a.count > 0 && a.sendbuff == nullptr && a.recvbuff == nullptr)
    return fail(ncclInvalidArgument, "%s: buffers are NULL with count %zu", a.call, a.count);
  return ncclSuccess;
}

ncclResult_t notYet(const CollArgs& a) {
  ncclResult_t res = checkCollArgs(a);
  if (res == ncclSuccess) res = fail(ncclInvalidUsage, "%s is not supported by accl yet", a.call);
  recordGroupError(res);
  return res;
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllReduce",
                  [&] { return notYet({"ncclAllReduce", sendbuff, recvbuff, count, datatype, op, -1, comm}); });
}

ACCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduce",
                  [&] { return notYet({"ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm}); });
}

ACCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclBcast", [&] { return notYet({"ncclBcast", buff, buff, count, datatype, -1, root, comm}); });
}

ACCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBroadcast",
                  [&] { return notYet({"ncclBroadcast", sendbuff, recvbuff, count, datatype, -1, root, comm}); });
}

ACCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduceScatter", [&] {
    return notYet({"ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, -1, comm});
  });
}

ACCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllGather",
                  [&] { return notYet({"ncclAllGather", sendbuff, recvbuff, sendcount, datatype, -1, -1, comm}); });
}

ACCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAlltoAll",
                  [&] { return notYet({"ncclAlltoAll", sendbuff, recvbuff, count, datatype, -1, -1, comm}); });
}

ACCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclGather",
                  [&] { return notYet({"ncclGather", sendbuff, recvbuff, count, datatype, -1, root, comm}); });
}

ACCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclScatter",
                  [&] { return notYet({"ncclScatter", sendbuff, recvbuff, count, datatype, -1, root, comm}); });
}

ACCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclSend", [&] { return notYet({"ncclSend", sendbuff, nullptr, count, datatype, -1, peer, comm}); });
}

ACCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard("ncclRecv", [&] { return notYet({"ncclRecv", nullptr, recvbuff, count, datatype, -1, peer, comm}); });
}

ACCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiGuard("ncclRedOpCreatePreMulSum", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclRedOpCreatePreMulSum", comm));
    if (op == nullptr || scalar == nullptr)
      return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %s is NULL", op == nullptr ? "op" : "scalar");
    return fail(ncclInvalidUsage, "ncclRedOpCreatePreMulSum is not supported by accl yet");
  });
}

ACCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return apiGuard("ncclRedOpDestroy", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclRedOpDestroy", comm));
    if ((int)op >= 0 && (int)op < ncclNumOps)
      return fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d is a built-in operator and cannot be destroyed",
                  (int)op);
    return fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not created on comm %p", (int)op, (void*)comm);
  });
}
