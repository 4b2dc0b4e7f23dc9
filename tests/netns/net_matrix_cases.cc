// The collective matrix across namespace hosts (net_matrix_rank matrix): a covering subset of the
// mp matrix, sized so one run takes seconds on 2 cores.
//
// One communicator from NCCL_COMM_ID, then one ncclCommSplit child per configuration, made after
// the configuration's variables are set (NCCL_ALGO, NCCL_PROTO and the buffer/channel settings are
// read when a communicator is made):
//   Ring_Simple, Ring_LL   every collective (all-reduce, reduce, reduce-scatter, all-gather,
//                          broadcast) x {float, bf16, int32} x {sum, avg, max} (the op unused by
//                          all-gather and broadcast): 9 cases per collective whose count rotates
//                          through 0 / 1 / 7 / 4099 so that each count runs in place and out of
//                          place, root rotating; plus a send/recv ring at each count;
//   Tree_Simple, Tree_LL   all-reduce (tree applies to it) x type x op, counts rotating;
//   Large_Simple, Large_LL NCCL_BUFFSIZE=8192 / NCCL_LL_BUFFSIZE=16384 and 2 channels with ~48 KiB
//                          per rank block: every collective once (type/op rotating) and the ring,
//                          many chunks on both channels (called through the nccl*Config variants
//                          with algSelection and minCTAs = maxCTAs = 2); Large_Simple with
//                          all-reduce on tree.
// "allreduce" keeps the all-reduce cases only (the net plugin test).
// Expected values are closed-form (mp/collective_expect.h); every element and guard is checked.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mp/collective_runner.h"
#include "netns/net_matrix_rank.h"

namespace accl::test {
namespace {

struct MatrixConfig {
  const char* name;
  const char* algo;
  const char* proto;
  bool large;
  bool treeOnly;  // all-reduce cases only (the other collectives run ring anyway)
};
const MatrixConfig kConfigs[] = {
    {"Ring_Simple", "Ring", "Simple", false, false}, {"Ring_LL", "Ring", "LL", false, false},
    {"Tree_Simple", "Ring;AllReduce:Tree", "Simple", false, true},
    {"Tree_LL", "Ring;AllReduce:Tree", "LL", false, true},
    {"Large_Simple", "Ring;AllReduce:Tree", "Simple", true, false}, {"Large_LL", "Ring", "LL", true, false},
};
const size_t kSmallCounts[] = {0, 1, 7, 4099};
const ncclDataType_t kTypes[] = {ncclFloat32, ncclBfloat16, ncclInt32};
const Op kOps[] = {Op::kSum, Op::kAvg, Op::kMax};
const Coll kColls[] = {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kBroadcast};
constexpr size_t kLargeBytes = 49152;  // per rank block; odd element counts below
constexpr size_t kLargeExtra = 7;

size_t largeCount(ncclDataType_t type) { return kLargeBytes / typeSize(type) + kLargeExtra; }

void applyConfig(const MatrixConfig& c) {
  // Large: the algorithm goes per call in the nccl*Config variant (with the channel bounds).
  if (c.large) unsetenv("NCCL_ALGO");
  else setenv("NCCL_ALGO", c.algo, 1);
  setenv("NCCL_PROTO", c.proto, 1);
  if (c.large) {
    setenv("NCCL_BUFFSIZE", "8192", 1);
    setenv("NCCL_LL_BUFFSIZE", "16384", 1);
    setenv("NCCL_MIN_NCHANNELS", "2", 1);
    setenv("NCCL_MAX_NCHANNELS", "2", 1);
  } else {
    for (const char* v : {"NCCL_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}) unsetenv(v);
  }
}

std::vector<CaseSpec> casesFor(const MatrixConfig& c, int configIndex, int nranks, bool allReduceOnly) {
  std::vector<CaseSpec> out;
  int k = configIndex;  // rotation: every configuration starts elsewhere
  for (Coll coll : kColls) {
    if ((c.treeOnly || allReduceOnly) && coll != Coll::kAllReduce) continue;
    if (c.large) {
      // One case per collective: type, op, in-place and root rotate with the configuration.
      const int pick = configIndex + (int)coll;
      CaseSpec cs;
      cs.coll = coll;
      cs.type = kTypes[pick % 3];
      cs.op = collReduces(coll) ? kOps[(pick + configIndex / 2) % 3] : Op::kNone;
      cs.count = largeCount(cs.type);
      cs.inPlace = pick % 2 == 1;
      cs.root = pick % nranks;
      out.push_back(cs);
      continue;
    }
    int r = k;
    for (ncclDataType_t type : kTypes) {
      for (Op op : kOps) {
        // The non-reducing collectives run the same 9 variants per type (op unused), so they too
        // meet every count in place and out of place.
        CaseSpec cs;
        cs.coll = coll;
        cs.type = type;
        cs.op = collReduces(coll) ? op : Op::kNone;
        cs.count = kSmallCounts[r % 4];
        cs.inPlace = (r / 4) % 2 == 1;
        cs.root = r % nranks;
        out.push_back(cs);
        ++r;
      }
    }
    k += 3;
  }
  return out;
}

// Element j of rank r's ring message (int32): distinct per rank and index.
int32_t ringValue(int rank, size_t j) { return (int32_t)(rank * 1000003u + j * 7919u + 17u); }

// Rank r sends `count` int32 to r+1 and receives from r-1 in one group; guards must stay.
bool runRing(RankContext& ctx, ncclComm_t comm, const std::string& launch, size_t count) {
  const int n = ctx.nranks, r = ctx.rank;
  const size_t guard = 16;
  const int32_t kGuard = 0x5a5a5a5a;
  std::vector<int32_t> send(count + 2 * guard, kGuard), recv(count + 2 * guard, kGuard);
  for (size_t j = 0; j < count; ++j) send[guard + j] = ringValue(r, j);
  const int to = (r + 1) % n, from = (r + n - 1) % n;
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess) res = ncclSend(send.data() + guard, count, ncclInt32, to, comm, nullptr);
  if (res == ncclSuccess) res = ncclRecv(recv.data() + guard, count, ncclInt32, from, comm, nullptr);
  ncclResult_t end = ncclGroupEnd();
  if (res == ncclSuccess) res = end;
  if (res != ncclSuccess) {
    ctx.fail("[%s] rank %d: send/recv ring count=%zu returned %d (%s); last error: %s", launch.c_str(), r, count, res,
             ncclGetErrorString(res), ncclGetLastError(nullptr));
    return false;
  }
  size_t wrong = 0;
  std::string first;
  for (size_t e = 0; e < recv.size(); ++e) {
    const bool inside = e >= guard && e < guard + count;
    const int32_t want = inside ? ringValue(from, e - guard) : kGuard;
    if (recv[e] != want && wrong++ == 0)
      first = "recvbuff[" + std::to_string((long)e - (long)guard) + "]: expected " + std::to_string(want) + " got " +
              std::to_string(recv[e]);
  }
  ctx.check(wrong == 0, "[%s] rank %d: send/recv ring count=%zu from rank %d: %zu elements wrong (guards included); %s",
            launch.c_str(), r, count, from, wrong, first.c_str());
  return true;
}

}  // namespace

int runMatrixMode(const MhRank& me, const std::string& which) {
  const bool allReduceOnly = which == "allreduce";
  const auto t0 = std::chrono::steady_clock::now();
  PrintingContext pc(me);
  RankContext& ctx = pc.ctx();
  ncclComm_t world = initJobComm(me, ctx);
  if (!world) return 1;
  ncclResult_t res = ncclSuccess;
  int configsRun = 0, casesRun = 0;
  bool stop = false;
  for (int ci = 0; ci < (int)(sizeof(kConfigs) / sizeof(kConfigs[0])) && !stop; ++ci) {
    const MatrixConfig& c = kConfigs[ci];
    if (allReduceOnly && c.large && std::strcmp(c.proto, "LL") == 0) continue;  // one multi-chunk config is enough
    applyConfig(c);
    const std::string launch =
        std::string(c.name) + " " + jobShape(me) + " NCCL_ALGO=" + c.algo + " NCCL_PROTO=" + c.proto;
    ncclComm_t comm = nullptr;
    res = ncclCommSplit(world, 0, me.rank, &comm, nullptr);
    if (res != ncclSuccess || comm == nullptr) {
      ctx.fail("[%s] ncclCommSplit returned %d (%s): %s", launch.c_str(), res, ncclGetErrorString(res),
               ncclGetLastError(nullptr));
      stop = true;
      break;
    }
    const std::vector<CaseSpec> cases = casesFor(c, ci, me.nranks, allReduceOnly);
    // Large cases go through the nccl*Config variants with minCTAs = maxCTAs = 2, so every call
    // spreads over both channels (the tuner would give these sizes one).
    ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
    config.algSelection = c.algo;
    config.minCTAs = config.maxCTAs = 2;
    CollectiveRunner runner(ctx, comm, launch, CallVia{c.large, c.large ? &config : nullptr});
    bool callsOk = true;
    for (const CaseSpec& cs : cases)
      if (!(callsOk = runner.run(cs))) break;
    if (callsOk && !c.treeOnly && !allReduceOnly) {
      if (c.large) callsOk = runRing(ctx, comm, launch, largeCount(ncclInt32));
      else
        for (size_t count : kSmallCounts)
          if (!(callsOk = runRing(ctx, comm, launch, count))) break;
    }
    runner.finish(cases.size());
    casesRun += runner.casesRun();
    ++configsRun;
    if (!callsOk) {
      ncclCommAbort(comm);
      stop = true;
      break;
    }
    res = ncclCommDestroy(comm);
    ctx.check(res == ncclSuccess, "[%s] ncclCommDestroy returned %d: %s", launch.c_str(), res, ncclGetLastError(nullptr));
  }
  res = stop ? ncclCommAbort(world) : ncclCommDestroy(world);
  ctx.check(res == ncclSuccess, "closing the world communicator returned %d: %s", res, ncclGetLastError(nullptr));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.note("matrix %s: %d configurations, %d collective cases (+ send/recv rings), %s, %.2f s", which.c_str(),
           configsRun, casesRun, pc.failed() ? "FAILED" : "all passed", s);
  return pc.failed() ? 1 : 0;
}

}  // namespace accl::test
