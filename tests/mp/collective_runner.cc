// One rank's side of the collective matrix: buffers, PreMulSum ops, the call, the checks.
#include "mp/collective_runner.h"

#include <cstdint>

#include "mp/collective_call.h"

namespace accl::test {

const char* collCallName(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce:
      return "ncclAllReduce";
    case Coll::kReduce:
      return "ncclReduce";
    case Coll::kBroadcast:
      return "ncclBroadcast";
    case Coll::kBcast:
      return "ncclBcast";
    case Coll::kReduceScatter:
      return "ncclReduceScatter";
    case Coll::kAllGather:
      return "ncclAllGather";
    case Coll::kAlltoAll:
      return "ncclAlltoAll";
    case Coll::kGather:
      return "ncclGather";
    case Coll::kScatter:
      return "ncclScatter";
  }
  return "?";
}

namespace {

ncclResult_t callConfigVariant(const CaseSpec& cs, const void* send, void* recv, ncclRedOp_t op, ncclComm_t comm,
                               const ncclCollConfig_t* config) {
  cudaStream_t stream = nullptr;
  switch (cs.coll) {
    case Coll::kAllReduce:
      return ncclAllReduceConfig(send, recv, cs.count, cs.type, op, comm, stream, config);
    case Coll::kReduce:
      return ncclReduceConfig(send, recv, cs.count, cs.type, op, cs.root, comm, stream, config);
    case Coll::kBroadcast:
      return ncclBroadcastConfig(send, recv, cs.count, cs.type, cs.root, comm, stream, config);
    case Coll::kBcast:
      return ncclBroadcastConfig(recv, recv, cs.count, cs.type, cs.root, comm, stream, config);
    case Coll::kReduceScatter:
      return ncclReduceScatterConfig(send, recv, cs.count, cs.type, op, comm, stream, config);
    case Coll::kAllGather:
      return ncclAllGatherConfig(send, recv, cs.count, cs.type, comm, stream, config);
    case Coll::kAlltoAll:
      return ncclAlltoAllConfig(send, recv, cs.count, cs.type, comm, stream, config);
    case Coll::kGather:
      return ncclGatherConfig(send, recv, cs.count, cs.type, cs.root, comm, stream, config);
    case Coll::kScatter:
      return ncclScatterConfig(send, recv, cs.count, cs.type, cs.root, comm, stream, config);
  }
  return ncclInternalError;
}

}  // namespace

ncclResult_t callCollective(const CaseSpec& cs, const void* send, void* recv, ncclRedOp_t op,
                            ncclComm_t comm, CallVia via) {
  if (via.configVariant) return callConfigVariant(cs, send, recv, op, comm, via.config);
  return callCollectiveOnStream(cs, send, recv, op, comm, /*stream=*/nullptr);
}

CollectiveRunner::CollectiveRunner(RankContext& ctx, ncclComm_t comm, std::string launch, CallVia via)
    : ctx_(ctx), comm_(comm), launch_(std::move(launch)), via_(via) {}

void CollectiveRunner::caseFailure(const CaseSpec& cs, const std::string& what) {
  ++failed_;
  if (failed_ > kMaxReportedCases) return;
  ctx_.fail("[%s] rank %d: %s: %s", launch_.c_str(), ctx_.rank, describeCase(cs).c_str(), what.c_str());
}

bool CollectiveRunner::run(const CaseSpec& cs) {
  ++run_;
  const int n = ctx_.nranks;
  const CaseModel model(cs, n);
  const RankLayout layout = layoutFor(cs, n, ctx_.rank);
  for (size_t b = 0; b < layout.buffers.size(); ++b) buffers_[b].prepare(model, layout.buffers[b]);
  const void* send = buffers_[layout.sendBuffer].at(layout.sendOffset);
  void* recv = buffers_[layout.recvBuffer].at(layout.recvOffset);

  ncclRedOp_t op = collReduces(cs.coll) ? builtinRedOp(cs.op) : ncclSum;
  const bool userOp = collReduces(cs.coll) && (cs.op == Op::kPreMulSumImm || cs.op == Op::kPreMulSumDev);
  uint64_t scalar = 0;  // one element of cs.type in its low bytes, 8-byte aligned
  if (userOp) {
    const bool device = cs.op == Op::kPreMulSumDev;
    const uint64_t real = elemFromInt(cs.type, premulScalar(cs.type, cs.op, ctx_.rank));
    const uint64_t decoy = elemFromInt(cs.type, premulDecoyScalar(cs.type));
    storeElem(cs.type, &scalar, 0, device ? decoy : real);
    ncclResult_t res = ncclRedOpCreatePreMulSum(&op, &scalar, cs.type,
                                                device ? ncclScalarDevice : ncclScalarHostImmediate, comm_);
    if (res != ncclSuccess) {
      caseFailure(cs, std::string("ncclRedOpCreatePreMulSum returned ") + std::to_string(res) + " (" +
                          ncclGetErrorString(res) + "); last error: " + ncclGetLastError(nullptr));
      return false;
    }
    // Immediate: the library must have copied the value. Device: it must read it at run time.
    storeElem(cs.type, &scalar, 0, device ? real : decoy);
  }

  const ncclResult_t res = callCollective(cs, send, recv, op, comm_, via_);
  if (userOp) {
    ncclResult_t destroyed = ncclRedOpDestroy(op, comm_);
    if (destroyed != ncclSuccess)
      caseFailure(cs, std::string("ncclRedOpDestroy returned ") + std::to_string(destroyed) + " (" +
                          ncclGetErrorString(destroyed) + "); last error: " + ncclGetLastError(nullptr));
  }
  if (res != ncclSuccess) {
    const std::string call = !via_.configVariant      ? collCallName(cs.coll)
                             : cs.coll == Coll::kBcast ? "ncclBroadcastConfig"
                                                       : std::string(collCallName(cs.coll)) + "Config";
    caseFailure(cs, call + " returned " + std::to_string(res) + " (" + ncclGetErrorString(res) +
                        "); last error: " + ncclGetLastError(nullptr));
    return false;
  }

  size_t wrong = 0, total = 0;
  std::vector<std::string> reports;
  for (size_t b = 0; b < layout.buffers.size(); ++b) {
    const size_t budget = kMaxMismatchesPerCase > reports.size() ? kMaxMismatchesPerCase - reports.size() : 0;
    wrong += buffers_[b].check(model, layout.buffers[b], budget, &reports);
    total += layout.buffers[b].elems + 2 * kGuardElems + static_cast<size_t>(cs.misalign);
  }
  if (wrong > 0) {
    std::string what =
        std::to_string(wrong) + " of " + std::to_string(total) + " elements wrong (guards included)";
    for (const std::string& r : reports) what += "; " + r;
    caseFailure(cs, what);
  }
  return true;
}

void CollectiveRunner::finish(size_t plannedCases) {
  ctx_.note("[%s] rank %d: ran %d of %zu cases, %d failed", launch_.c_str(), ctx_.rank, run_, plannedCases,
            failed_);
  if (failed_ > kMaxReportedCases)
    ctx_.fail("[%s] rank %d: %d cases failed in all (only the first %d are described)", launch_.c_str(),
              ctx_.rank, failed_, kMaxReportedCases);
}

}  // namespace accl::test
