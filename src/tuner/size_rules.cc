// Size thresholds for the host backend. Measured with accl-perf on the 2-core CI-class machine
// (Release, 2 processes): LL never beats Simple on a CPU (0.9 vs 0.75 us at 8 B, 7 us vs 1.3 us at
// 4 KiB: every 8-byte LL store misses on a line the reader holds), so the host picks Simple and
// LL runs only when NCCL_PROTO asks for it; the tree only pays off across nodes.
#include "tuner/size_rules.h"

#include "util/check.h"
#include "util/log.h"

namespace accl {
namespace {

constexpr size_t kLLMaxBytes = 0;  // see above: Simple also wins at 8 B once heads are cached
constexpr size_t kTreeMaxBytes = 4 << 20;
// One-round all-reduce up to this size: with more ranks than cores every ring step waits for a
// peer to be scheduled, so fewer steps win while the extra bytes stay cheap.
constexpr size_t kOneShotMaxBytes = 8 << 10;

bool hostAlgoExists(FuncId func, int algo) {
  return algo == kAlgoRing || (algo == kAlgoTree && func == kFuncAllReduce);
}

}  // namespace

ncclResult_t chooseBySize(const AlgoProtoFilter& filter, FuncId func, size_t bytes, int nranks, int nNodes,
                          AlgoChoice* out) {
  // Algorithm: the preferred one if allowed, else any allowed one that exists here.
  AlgoId preferred = (func == kFuncAllReduce && nNodes > 1 && bytes <= kTreeMaxBytes) ? kAlgoTree : kAlgoRing;
  int algo = -1;
  if (filter.allowsAlgo(func, preferred) && hostAlgoExists(func, preferred)) algo = preferred;
  for (int a : {kAlgoRing, kAlgoTree})
    if (algo < 0 && filter.allowsAlgo(func, a) && hostAlgoExists(func, a)) algo = a;
  if (algo < 0)
    return fail(ncclInvalidUsage, "%s: NCCL_ALGO allows no algorithm the host backend implements (Ring%s)",
                funcName(func), func == kFuncAllReduce ? ", Tree" : "");
  // Protocol: LL for small messages, Simple otherwise. LL128 is a GPU protocol; where it is the
  // only one allowed the host runs Simple, which has the same semantics.
  ProtoId preferredProto = bytes <= kLLMaxBytes ? kProtoLL : kProtoSimple;
  int proto = -1;
  if (filter.allowsProto(func, preferredProto)) proto = preferredProto;
  for (int p : {kProtoSimple, kProtoLL})
    if (proto < 0 && filter.allowsProto(func, p)) proto = p;
  if (proto < 0 && filter.allowsProto(func, kProtoLL128)) proto = kProtoSimple;
  if (proto < 0) return fail(ncclInvalidUsage, "%s: NCCL_PROTO allows no protocol", funcName(func));
  out->algo = static_cast<AlgoId>(algo);
  out->proto = static_cast<ProtoId>(proto);
  out->oneShot = func == kFuncAllReduce && nranks >= 3 && bytes > 0 && bytes <= kOneShotMaxBytes && !filter.algoSet;
  ACCL_TRACE(ACCL_LOG_TUNING, "%s %zu bytes nranks %d nNodes %d -> %s/%s", funcName(func), bytes, nranks, nNodes,
             out->oneShot ? "OneShot" : algoName(algo), protoName(proto));
  return ncclSuccess;
}

}  // namespace accl
