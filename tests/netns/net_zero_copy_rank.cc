// The zero-copy network path across namespace hosts (net_matrix_rank zerocopy): large Simple steps
// go from the user's buffer straight to the socket or the verbs send (transports/net/net_user_send.h,
// backend/host/user_sends.h). Run with ACCL_NET_ZERO_COPY_MIN=4096 and NCCL_BUFFSIZE=65536 (8 KiB
// slots), so steps fall below, at and above the threshold; the test in CMake checks the proxy's
// log line that proves the path ran. Two communicators, each on 2 channels:
//   Ring   every collective (all-reduce, reduce, reduce-scatter, all-gather, broadcast), counts
//          around the threshold and odd ones, in place and out of place alternating, misaligned
//          every third case, types and ops rotating (sum, avg, premulsum: an input scaled on its
//          way is not sent from the user's buffer, the results still are; max);
//   Tree   all-reduce on the tree (two phases over the same user buffer).
// Then buffers that change between calls: per iteration a fresh mapping (munmap'd afterwards, so
// the next one usually lands at the same address) and a fresh heap buffer, new values each time,
// in-place and out-of-place all-reduces; a send that served a stale buffer shows as wrong values.
// Then buffers registered with ncclCommRegister (the only ones a device that needs registered
// memory, IB verbs, sends from directly), registered, used and deregistered round by round.
// Last a send/recv ring (the point-to-point loop sends from the user's buffer too) over fresh
// mappings, counts around the threshold.
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mp/collective_runner.h"
#include "netns/net_matrix_rank.h"

namespace accl::test {
namespace {

// Element counts: float32 steps of 8 KiB slots split over 2 channels and the ranks, so the step
// sizes pass the 4 KiB threshold from below and above; odd counts leave a short last step.
const size_t kCounts[] = {1023, 1024, 1025, 2047, 2048, 2049, 4095, 4097, 8192, 16411, 65539, 262147};
const ncclDataType_t kTypes[] = {ncclFloat32, ncclInt32, ncclBfloat16};
const Op kOps[] = {Op::kSum, Op::kAvg, Op::kPreMulSumImm, Op::kMax};
const Coll kColls[] = {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kBroadcast};

std::vector<CaseSpec> ringCases(int nranks) {
  std::vector<CaseSpec> out;
  int k = 0;
  for (Coll coll : kColls)
    for (size_t count : kCounts) {
      CaseSpec cs;
      cs.coll = coll;
      cs.type = kTypes[k % 3];
      cs.op = collReduces(coll) ? kOps[k % 4] : Op::kNone;
      cs.count = count;
      cs.inPlace = k % 2 == 1;
      cs.root = k % nranks;
      cs.misalign = k % 3 == 2 ? 1 : 0;
      out.push_back(cs);
      ++k;
    }
  return out;
}

std::vector<CaseSpec> treeCases() {
  std::vector<CaseSpec> out;
  int k = 0;
  for (size_t count : kCounts) {
    CaseSpec cs;
    cs.coll = Coll::kAllReduce;
    cs.type = kTypes[k % 3];
    cs.op = kOps[k % 4];
    cs.count = count;
    cs.inPlace = k % 2 == 0;
    cs.misalign = k % 3 == 1 ? 1 : 0;
    out.push_back(cs);
    ++k;
  }
  return out;
}

// Rank r's element j in iteration `it`: small integers, so float sums are exact.
float reallocValue(int rank, size_t j, int it) { return float((rank + 1) * int(j % 97) + 3 * it + 1); }
float reallocSum(int nranks, size_t j, int it) {
  return float(int(j % 97) * nranks * (nranks + 1) / 2 + nranks * (3 * it + 1));
}

// All-reduces over buffers that are freed and made again between calls; false when a call failed.
bool runRealloc(RankContext& ctx, ncclComm_t comm, const ncclCollConfig_t* config) {
  const size_t count = 262147;  // ~1 MiB of float
  const size_t bytes = count * sizeof(float);
  for (int it = 0; it < 6; ++it) {
    const bool inPlace = it % 2 == 0;
    float* a = nullptr;
    float* b = nullptr;
    void* mapped = MAP_FAILED;
    if (it % 3 != 2) {
      mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (mapped == MAP_FAILED) return ctx.fail("realloc iteration %d: mmap of %zu bytes failed", it, bytes), false;
      a = static_cast<float*>(mapped);
    } else {
      a = static_cast<float*>(std::malloc(bytes));
    }
    if (!inPlace) b = static_cast<float*>(std::malloc(bytes));
    for (size_t j = 0; j < count; ++j) a[j] = reallocValue(ctx.rank, j, it);
    float* out = inPlace ? a : b;
    if (!inPlace) std::memset(out, 0xff, bytes);
    ncclResult_t res = ncclAllReduceConfig(a, out, count, ncclFloat32, ncclSum, comm, nullptr, config);
    size_t wrong = 0;
    std::string first;
    if (res == ncclSuccess)
      for (size_t j = 0; j < count; ++j) {
        const float want = reallocSum(ctx.nranks, j, it);
        if (out[j] != want && wrong++ == 0)
          first = "[" + std::to_string(j) + "] expected " + std::to_string(want) + " got " + std::to_string(out[j]);
      }
    const void* where = a;
    if (mapped != MAP_FAILED) munmap(mapped, bytes);
    else std::free(a);
    std::free(b);
    if (res != ncclSuccess)
      return ctx.fail("realloc iteration %d: ncclAllReduceConfig returned %d: %s", it, res, ncclGetLastError(nullptr)),
             false;
    ctx.check(wrong == 0, "realloc iteration %d (%s, buffer %p): %zu elements wrong; %s", it,
              inPlace ? "in place" : "out of place", where, wrong, first.c_str());
  }
  return true;
}

// Buffers registered with ncclCommRegister: over a device that sends only from registered memory
// (IB verbs, plugins) these are the steps that go straight from the user's memory. Per round two
// fresh mappings are registered; an out-of-place then an in-place all-reduce and a send/recv
// ring run over them; then both are deregistered (the proxy releases its device registrations
// of them, which the test in CMake counts) and unmapped, so the next round's buffers usually
// land at the same addresses under new registrations. False when a call failed.
bool runRegistered(RankContext& ctx, ncclComm_t comm, const ncclCollConfig_t* config) {
  const size_t count = 262147;  // ~1 MiB of float
  const size_t bytes = count * sizeof(float);
  const int n = ctx.nranks, r = ctx.rank, to = (r + 1) % n, from = (r + n - 1) % n;
  for (int round = 0; round < 3; ++round) {
    const int it = 100 + round;  // values unlike the other scenarios'
    void* ma = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* mb = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ma == MAP_FAILED || mb == MAP_FAILED) return ctx.fail("registered round %d: mmap failed", round), false;
    float* a = static_cast<float*>(ma);
    float* b = static_cast<float*>(mb);
    void* ha = nullptr;
    void* hb = nullptr;
    ncclResult_t res = ncclCommRegister(comm, a, bytes, &ha);
    if (res == ncclSuccess) res = ncclCommRegister(comm, b, bytes, &hb);
    std::string what = "ncclCommRegister";
    for (int k = 0; k < 3 && res == ncclSuccess; ++k) {
      const bool inPlace = k == 1, p2p = k == 2;
      for (size_t j = 0; j < count; ++j) a[j] = reallocValue(r, j, it);
      std::memset(b, 0xff, bytes);
      float* out = inPlace ? a : b;
      if (p2p) {
        what = "send/recv";
        res = ncclGroupStart();
        if (res == ncclSuccess) res = ncclSend(a, count, ncclFloat32, to, comm, nullptr);
        if (res == ncclSuccess) res = ncclRecv(b, count, ncclFloat32, from, comm, nullptr);
        const ncclResult_t end = ncclGroupEnd();
        if (res == ncclSuccess) res = end;
      } else {
        what = inPlace ? "in-place all-reduce" : "out-of-place all-reduce";
        res = ncclAllReduceConfig(a, out, count, ncclFloat32, ncclSum, comm, nullptr, config);
      }
      size_t wrong = 0;
      std::string first;
      for (size_t j = 0; res == ncclSuccess && j < count; ++j) {
        const float want = p2p ? reallocValue(from, j, it) : reallocSum(n, j, it);
        if (out[j] != want && wrong++ == 0)
          first = "[" + std::to_string(j) + "] expected " + std::to_string(want) + " got " + std::to_string(out[j]);
      }
      ctx.check(wrong == 0, "registered round %d, %s: %zu elements wrong; %s", round, what.c_str(), wrong,
                first.c_str());
    }
    if (hb && ncclCommDeregister(comm, hb) != ncclSuccess && res == ncclSuccess) res = ncclInternalError;
    if (ha && ncclCommDeregister(comm, ha) != ncclSuccess && res == ncclSuccess) res = ncclInternalError;
    munmap(ma, bytes);
    munmap(mb, bytes);
    if (res != ncclSuccess)
      return ctx.fail("registered round %d, %s returned %d: %s", round, what.c_str(), res, ncclGetLastError(nullptr)),
             false;
  }
  return true;
}

int32_t ringValue(int rank, size_t j, int it) { return int32_t(rank * 1000003u + j * 7919u + unsigned(it) * 31u + 17u); }

// Rank r sends count int32 to r+1 and receives from r-1 in one group, each buffer a fresh mapping
// with guards after it; false when a call failed.
bool runP2pRing(RankContext& ctx, ncclComm_t comm) {
  const size_t kGuard = 16;
  const int32_t kGuardValue = 0x5a5a5a5a;
  const int n = ctx.nranks, r = ctx.rank, to = (r + 1) % n, from = (r + n - 1) % n;
  int it = 0;
  for (size_t count : {size_t(1023), size_t(1024), size_t(1025), size_t(2049), size_t(65539), size_t(262147)}) {
    const size_t bytes = (count + kGuard) * sizeof(int32_t);
    void* s = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* d = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED || d == MAP_FAILED) return ctx.fail("send/recv ring: mmap of %zu bytes failed", bytes), false;
    int32_t* send = static_cast<int32_t*>(s);
    int32_t* recv = static_cast<int32_t*>(d);
    for (size_t j = 0; j < count + kGuard; ++j) {
      send[j] = ringValue(r, j, it);
      recv[j] = kGuardValue;
    }
    ncclResult_t res = ncclGroupStart();
    if (res == ncclSuccess) res = ncclSend(send, count, ncclInt32, to, comm, nullptr);
    if (res == ncclSuccess) res = ncclRecv(recv, count, ncclInt32, from, comm, nullptr);
    const ncclResult_t end = ncclGroupEnd();
    if (res == ncclSuccess) res = end;
    size_t wrong = 0;
    std::string first;
    for (size_t j = 0; res == ncclSuccess && j < count + kGuard; ++j) {
      const int32_t want = j < count ? ringValue(from, j, it) : kGuardValue;
      if (recv[j] != want && wrong++ == 0)
        first = "[" + std::to_string(j) + "] expected " + std::to_string(want) + " got " + std::to_string(recv[j]);
    }
    munmap(s, bytes);
    munmap(d, bytes);
    if (res != ncclSuccess)
      return ctx.fail("send/recv ring count=%zu returned %d: %s", count, res, ncclGetLastError(nullptr)), false;
    ctx.check(wrong == 0, "send/recv ring count=%zu from rank %d: %zu elements wrong (guards included); %s", count,
              from, wrong, first.c_str());
    ++it;
  }
  return true;
}

}  // namespace

int runZeroCopyMode(const MhRank& me) {
  const auto t0 = std::chrono::steady_clock::now();
  PrintingContext pc(me);
  RankContext& ctx = pc.ctx();
  setenv("NCCL_PROTO", "Simple", 1);
  setenv("NCCL_MIN_NCHANNELS", "2", 1);
  setenv("NCCL_MAX_NCHANNELS", "2", 1);
  ncclComm_t comm = initJobComm(me, ctx);
  if (!comm) return 1;
  const std::string tag = jobShape(me);
  bool ok = true;
  int cases = 0;
  for (const char* algo : {"Ring", "Tree"}) {
    const bool tree = std::strcmp(algo, "Tree") == 0;
    ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
    config.algSelection = tree ? "allreduce:tree" : "ring";
    config.minCTAs = config.maxCTAs = 2;  // both channels for every size
    const std::string launch = std::string("zerocopy ") + algo + " " + tag;
    CollectiveRunner runner(ctx, comm, launch, CallVia{true, &config});
    const std::vector<CaseSpec> specs = tree ? treeCases() : ringCases(me.nranks);
    for (const CaseSpec& cs : specs)
      if (!(ok = runner.run(cs))) break;
    runner.finish(specs.size());
    cases += runner.casesRun();
    if (!ok) break;
    if (!(ok = runRealloc(ctx, comm, &config))) break;
    if (!(ok = runRegistered(ctx, comm, &config))) break;
  }
  if (ok) ok = runP2pRing(ctx, comm);
  const ncclResult_t res = ok ? ncclCommDestroy(comm) : ncclCommAbort(comm);
  ctx.check(res == ncclSuccess, "closing the communicator returned %d: %s", res, ncclGetLastError(nullptr));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.note("zerocopy: %d collective cases + buffers remade between calls, %s, %.2f s", cases,
           pc.failed() ? "FAILED" : "all passed", s);
  return pc.failed() ? 1 : 0;
}

}  // namespace accl::test
