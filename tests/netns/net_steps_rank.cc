// Step sizes across namespace hosts (net_matrix_rank steps): a communicator that spans hosts gets
// 4 MiB Simple FIFOs (8 slots of 512 KiB, core/engine/connections.h) at the defaults, and a work
// item fills those slots only when its share per rank does; smaller items step at 128 KiB or an
// eighth of their share (HostBackend::chunkElems). Every rank must cut each item the same way, or
// the ring's steps stop lining up. Cases, ring and tree, 1 and 2 channels, in place and out of
// place alternating, odd counts (a short last step), each element checked: shares below 1 MiB
// (128 KiB steps), between 1 and 4 MiB (steps in between, in 4 KiB multiples) and above (whole
// slots, many steps per rank); the collectives whose share is their whole count (all-gather,
// reduce-scatter) and those that split it (all-reduce, broadcast, reduce); then a send/recv ring
// whose transfers take whole slots. The test in CMake checks the INIT line that names the FIFO.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "mp/collective_runner.h"
#include "netns/net_matrix_rank.h"

namespace accl::test {
namespace {

std::vector<CaseSpec> stepCases(int nranks, bool tree) {
  struct Row {
    Coll coll;
    ncclDataType_t type;
    size_t count;
  };
  // Shares per rank and channel are count * size / ranks for the splitting collectives.
  const Row rows[] = {
      {Coll::kAllReduce, ncclFloat32, 200003},    // 0.8 MB: 128 KiB steps
      {Coll::kAllReduce, ncclFloat32, 1500007},   // 6 MB: 2 ranks 3 MB (384 KiB steps), 4 ranks 1.5 MB
      {Coll::kAllReduce, ncclBfloat16, 9000011},  // 18 MB: whole slots
      {Coll::kAllGather, ncclInt32, 1100003},     // 4.4 MB blocks: whole slots
      {Coll::kReduceScatter, ncclFloat32, 700001},  // 2.8 MB blocks: 344 KiB steps
      {Coll::kBroadcast, ncclInt8, 12000017},     // 12 MB
      {Coll::kReduce, ncclInt32, 1500007},        // 6 MB
  };
  std::vector<CaseSpec> out;
  int k = 0;
  for (const Row& row : rows) {
    if (tree && row.coll != Coll::kAllReduce) continue;  // the tree serves all-reduce only
    CaseSpec cs;
    cs.coll = row.coll;
    cs.type = row.type;
    cs.op = collReduces(row.coll) ? Op::kSum : Op::kNone;
    cs.count = row.count;
    cs.inPlace = k % 2 == 1;
    cs.root = k % nranks;
    out.push_back(cs);
    ++k;
  }
  return out;
}

int32_t ringValue(int rank, size_t j) { return int32_t(rank * 1000003u + j * 7919u + 17u); }

// Rank r sends `count` int32 to r+1 and receives from r-1 in one group; false when a call failed.
bool runP2pRing(RankContext& ctx, ncclComm_t comm, size_t count) {
  const int n = ctx.nranks, r = ctx.rank, to = (r + 1) % n, from = (r + n - 1) % n;
  std::vector<int32_t> send(count), recv(count + 1, -1);
  for (size_t j = 0; j < count; ++j) send[j] = ringValue(r, j);
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess) res = ncclSend(send.data(), count, ncclInt32, to, comm, nullptr);
  if (res == ncclSuccess) res = ncclRecv(recv.data(), count, ncclInt32, from, comm, nullptr);
  const ncclResult_t end = ncclGroupEnd();
  if (res == ncclSuccess) res = end;
  if (res != ncclSuccess)
    return ctx.fail("send/recv ring count=%zu returned %d: %s", count, res, ncclGetLastError(nullptr)), false;
  size_t wrong = 0, firstBad = 0;
  for (size_t j = 0; j <= count; ++j) {
    const int32_t want = j < count ? ringValue(from, j) : -1;
    if (recv[j] != want && wrong++ == 0) firstBad = j;
  }
  ctx.check(wrong == 0, "send/recv ring count=%zu from rank %d: %zu elements wrong (guard included), first [%zu]",
            count, from, wrong, firstBad);
  return true;
}

}  // namespace

int runStepsMode(const MhRank& me) {
  const auto t0 = std::chrono::steady_clock::now();
  PrintingContext pc(me);
  RankContext& ctx = pc.ctx();
  setenv("NCCL_PROTO", "Simple", 1);
  setenv("NCCL_MAX_NCHANNELS", "2", 1);
  ncclComm_t comm = initJobComm(me, ctx);
  if (!comm) return 1;
  const std::string tag = jobShape(me);
  bool ok = true;
  int cases = 0;
  for (int channels : {1, 2})
    for (const char* algo : {"ring", "allreduce:tree"}) {
      if (!ok) break;
      const bool tree = algo[0] == 'a';
      ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
      config.algSelection = algo;
      config.minCTAs = config.maxCTAs = channels;
      const std::string launch = std::string("steps ") + (tree ? "tree" : "ring") + " " +
                                 std::to_string(channels) + " channel(s) " + tag;
      CollectiveRunner runner(ctx, comm, launch, CallVia{true, &config});
      const std::vector<CaseSpec> specs = stepCases(me.nranks, tree);
      for (const CaseSpec& cs : specs)
        if (!(ok = runner.run(cs))) break;
      runner.finish(specs.size());
      cases += runner.casesRun();
    }
  if (ok) ok = runP2pRing(ctx, comm, 1500007);  // 6 MB: whole slots
  const ncclResult_t res = ok ? ncclCommDestroy(comm) : ncclCommAbort(comm);
  ctx.check(res == ncclSuccess, "closing the communicator returned %d: %s", res, ncclGetLastError(nullptr));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.note("steps: %d collective cases + a send/recv ring, %s, %.2f s", cases, pc.failed() ? "FAILED" : "all passed",
           s);
  return pc.failed() ? 1 : 0;
}

}  // namespace accl::test
