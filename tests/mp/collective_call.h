// The one place a CaseSpec becomes a public-API collective call on a given stream: the host matrix
// (collective_runner.cc, stream NULL) and the GPU matrix (tests/gpu, a rank's own stream) both
// issue their cases through it.
#pragma once

#include "mp/collective_expect.h"
#include "nccl.h"

namespace accl::test {

// Issues `cs` with the given buffers and op on `stream` and returns the call's result
// (ncclInternalError for a collective kind this switch does not know).
ncclResult_t callCollectiveOnStream(const CaseSpec& cs, const void* sendbuff, void* recvbuff, ncclRedOp_t op,
                                    ncclComm_t comm, cudaStream_t stream);

}  // namespace accl::test
