// Test-only LD_PRELOAD shim that makes ncclAllReduce misbehave on one rank, to check that accl-perf turns
// library errors, hangs, crashes and wrong results into a message and the right exit code instead of a
// hang. It interposes the public symbol and forwards to the library's pncclAllReduce.
//   ACCL_PERF_FAULT       error   : return the library's error for an invalid datatype (real message)
//                         unsupported : return ncclInvalidUsage without calling the library
//                         hang    : never return
//                         crash   : abort()
//                         corrupt : run the real call, then flip a bit of the first output element
//   ACCL_PERF_FAULT_RANK  the rank that misbehaves (default 1; -1: every rank)
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "nccl.h"

namespace {

bool faultyRank(ncclComm_t comm) {
  const char* env = std::getenv("ACCL_PERF_FAULT_RANK");
  int want = env ? std::atoi(env) : 1;
  int rank = -2;
  if (ncclCommUserRank(comm, &rank) != ncclSuccess) return false;
  return want == -1 || rank == want;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff,
                                                                             size_t count, ncclDataType_t datatype,
                                                                             ncclRedOp_t op, ncclComm_t comm,
                                                                             cudaStream_t stream) {
  const char* fault = std::getenv("ACCL_PERF_FAULT");
  if (fault && faultyRank(comm)) {
    if (!std::strcmp(fault, "error"))
      return pncclAllReduce(sendbuff, recvbuff, count, (ncclDataType_t)ncclNumTypes, op, comm, stream);
    if (!std::strcmp(fault, "unsupported")) return ncclInvalidUsage;
    if (!std::strcmp(fault, "hang"))
      for (;;) pause();
    if (!std::strcmp(fault, "crash")) std::abort();
    if (!std::strcmp(fault, "corrupt")) {
      ncclResult_t res = pncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
      if (res == ncclSuccess && count > 0) static_cast<unsigned char*>(recvbuff)[0] ^= 0x40;  // host backend
      return res;
    }
  }
  return pncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
}
