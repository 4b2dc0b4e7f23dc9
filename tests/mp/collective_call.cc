// callCollectiveOnStream (collective_call.h).
#include "mp/collective_call.h"

namespace accl::test {

ncclResult_t callCollectiveOnStream(const CaseSpec& cs, const void* send, void* recv, ncclRedOp_t op,
                                    ncclComm_t comm, cudaStream_t stream) {
  switch (cs.coll) {
    case Coll::kAllReduce:
      return ncclAllReduce(send, recv, cs.count, cs.type, op, comm, stream);
    case Coll::kReduce:
      return ncclReduce(send, recv, cs.count, cs.type, op, cs.root, comm, stream);
    case Coll::kBroadcast:
      return ncclBroadcast(send, recv, cs.count, cs.type, cs.root, comm, stream);
    case Coll::kBcast:
      return ncclBcast(recv, cs.count, cs.type, cs.root, comm, stream);
    case Coll::kReduceScatter:
      return ncclReduceScatter(send, recv, cs.count, cs.type, op, comm, stream);
    case Coll::kAllGather:
      return ncclAllGather(send, recv, cs.count, cs.type, comm, stream);
    case Coll::kAlltoAll:
      return ncclAlltoAll(send, recv, cs.count, cs.type, comm, stream);
    case Coll::kGather:
      return ncclGather(send, recv, cs.count, cs.type, cs.root, comm, stream);
    case Coll::kScatter:
      return ncclScatter(send, recv, cs.count, cs.type, cs.root, comm, stream);
  }
  return ncclInternalError;
}

}  // namespace accl::test
