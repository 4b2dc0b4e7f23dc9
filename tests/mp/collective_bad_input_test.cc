// Bad input to the collective, point-to-point and reduction-operator calls (label mp): invalid
// datatype, invalid op, invalid root/peer, count overflow, NULL buffers, PreMulSum handles used
// on the wrong communicator or with the wrong type, bad calls inside a group. Each case must
// return ncclInvalidArgument at once, leave a ncclGetLastError() text naming the call and the bad
// value, and leave the communicator working: after every case the ranks run an AllReduce and
// check its values (that part needs the collective engine).
//
// Every rank makes the same bad call, so no rank is left waiting for a peer that gave up. Cases
// whose bad buffer only matters on the root (e.g. a NULL recvbuff of Reduce) run with one rank.
// In thread mode ncclGetLastError is shared by the ranks; they all make the same bad call, so
// the text they read names the same call and value.
#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>

#include "mp/collective_expect.h"
#include "mp/collective_runner.h"
#include "mp/collective_types.h"
#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

using namespace std::chrono_literals;

// One bad call, made by every rank.
struct BadCase {
  std::string name;
  std::function<ncclResult_t()> call;
  // Each entry lists alternatives; the last error must contain at least one of each entry.
  std::vector<std::vector<std::string>> needles;
  ncclResult_t want = ncclInvalidArgument;
  // More alternatives, computed when the text is checked: in thread mode the text may come from
  // another rank's identical call, which names that rank's value (e.g. its op handle).
  std::function<std::vector<std::string>()> lateNeedles = nullptr;
};

const std::vector<std::string> kNullWords = {"NULL", "null", "nil"};

// A working AllReduce (int32 sum of rank + i) on comm: the proof that an earlier bad call did
// not break it. Returns false (with the failure recorded) when it did.
bool verifyCommWorks(RankContext& ctx, ncclComm_t comm, const std::string& when) {
  const int n = ctx.nranks;
  int32_t in[5], out[5];
  for (int i = 0; i < 5; ++i) in[i] = ctx.rank + i, out[i] = -7;
  ncclResult_t res = ncclAllReduce(in, out, 5, ncclInt32, ncclSum, comm, nullptr);
  if (!ctx.check(res == ncclSuccess,
                 "rank %d: %s: a valid ncclAllReduce then returned %d (%s); last error: %s", ctx.rank,
                 when.c_str(), res, ncclGetErrorString(res), ncclGetLastError(nullptr)))
    return false;
  bool ok = true;
  for (int i = 0; i < 5; ++i)
    ok &= ctx.check(out[i] == n * i + n * (n - 1) / 2,
                    "rank %d: %s: the valid ncclAllReduce gave [%d] = %d, expected %d", ctx.rank,
                    when.c_str(), i, out[i], n * i + n * (n - 1) / 2);
  ncclResult_t async = ncclInProgress;
  ncclCommGetAsyncError(comm, &async);
  ok &= ctx.check(async == ncclSuccess, "rank %d: %s: ncclCommGetAsyncError reports %d (%s)", ctx.rank,
                  when.c_str(), async, ncclGetErrorString(async));
  return ok;
}

// Makes each call, checks its code and message, then that every comm in `comms` still works.
// Stops at the first case after which a comm no longer works; returns false then.
bool runBadCases(RankContext& ctx, const std::vector<ncclComm_t>& comms, const std::vector<BadCase>& cases) {
  for (const BadCase& c : cases) {
    const ncclResult_t got = c.call();
    const std::string text = ncclGetLastError(nullptr);
    ctx.check(got == c.want, "rank %d: %s: returned %d (%s), expected %d (%s); last error: %s", ctx.rank,
              c.name.c_str(), got, ncclGetErrorString(got), c.want, ncclGetErrorString(c.want), text.c_str());
    if (got != ncclSuccess) {
      std::vector<std::vector<std::string>> needles = c.needles;
      if (c.lateNeedles) needles.push_back(c.lateNeedles());
      for (const std::vector<std::string>& alternatives : needles) {
        bool found = false;
        for (const std::string& a : alternatives) found |= text.find(a) != std::string::npos;
        std::string list;
        for (const std::string& a : alternatives) list += (list.empty() ? "'" : " or '") + a + "'";
        ctx.check(found, "rank %d: %s: the last error does not mention %s: %s", ctx.rank, c.name.c_str(),
                  list.c_str(), text.c_str());
      }
    }
    for (ncclComm_t comm : comms)
      if (!verifyCommWorks(ctx, comm, "after " + c.name)) return false;
  }
  return true;
}

// Valid buffers every bad call may use: 64 elements per rank of the largest type.
struct Scratch {
  explicit Scratch(int nranks) : send(64 * nranks), recv(64 * nranks) {}
  std::vector<double> send, recv;
  void* s() { return send.data(); }
  void* r() { return recv.data(); }
};

constexpr Coll kRootColls[] = {Coll::kReduce, Coll::kBroadcast, Coll::kBcast, Coll::kGather, Coll::kScatter};
constexpr Coll kReduceColls[] = {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter};

// A call of `coll` with everything valid except what the arguments change.
ncclResult_t callWith(Coll coll, const void* send, void* recv, size_t count, ncclDataType_t type,
                      ncclRedOp_t op, int root, ncclComm_t comm) {
  CaseSpec cs;
  cs.coll = coll;
  cs.type = type;
  cs.count = count;
  cs.root = root;
  return callCollective(cs, send, recv, op, comm);
}

// Send to the next rank / receive from the previous one, alone (not in a group): a bad argument
// must fail the call itself.
ncclResult_t sendWith(const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm) {
  return ncclSend(buf, count, type, peer, comm, nullptr);
}
ncclResult_t recvWith(void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm) {
  return ncclRecv(buf, count, type, peer, comm, nullptr);
}

class CollectiveBadInputTest : public MpTest {
 protected:
  // Runs body(ctx, comm) on every rank with a fresh communicator, then destroys it.
  void runOnComm(const std::function<void(RankContext&, ncclComm_t)>& body, int nIds = 1) {
    LaunchOptions opts = options(nIds);
    opts.deadline = 60s;
    LaunchResult res = launchRanks(opts, [&](RankContext& ctx) {
      ncclComm_t comm = nullptr;
      if (!initComm(ctx, &comm)) return;
      body(ctx, comm);
      RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
    });
    EXPECT_RANKS_OK(res);
  }
};

TEST_P(CollectiveBadInputTest, InvalidDatatype) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    Scratch buf(ctx.nranks);
    const int peer = (ctx.rank + 1) % ctx.nranks;
    std::vector<BadCase> cases;
    for (int badType : {99, static_cast<int>(ncclNumTypes), -1}) {
      const auto type = static_cast<ncclDataType_t>(badType);
      const std::string value = std::to_string(badType);
      for (Coll coll : kAllColls)
        cases.push_back(
            {std::string(collCallName(coll)) + " with datatype " + value,
             [&buf, coll, type, comm] { return callWith(coll, buf.s(), buf.r(), 4, type, ncclSum, 0, comm); },
             {{collCallName(coll)}, {value}}});
      cases.push_back({"ncclSend with datatype " + value,
                       [&buf, type, peer, comm] { return sendWith(buf.s(), 4, type, peer, comm); },
                       {{"ncclSend"}, {value}}});
      cases.push_back({"ncclRecv with datatype " + value,
                       [&buf, type, peer, comm] { return recvWith(buf.r(), 4, type, peer, comm); },
                       {{"ncclRecv"}, {value}}});
    }
    runBadCases(ctx, {comm}, cases);
  });
}

TEST_P(CollectiveBadInputTest, InvalidOp) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    Scratch buf(ctx.nranks);
    std::vector<BadCase> cases;
    // 77 and 0x7fffffff were never created; 5 (ncclNumOps) is the first user-op slot, unused here; -1.
    for (int badOp : {77, static_cast<int>(ncclNumOps), 0x7fffffff, -1}) {
      const auto op = static_cast<ncclRedOp_t>(badOp);
      const std::string value = std::to_string(badOp);
      for (Coll coll : kReduceColls)
        cases.push_back(
            {std::string(collCallName(coll)) + " with op " + value,
             [&buf, coll, op, comm] { return callWith(coll, buf.s(), buf.r(), 4, ncclFloat32, op, 0, comm); },
             {{collCallName(coll)}, {value}}});
    }
    runBadCases(ctx, {comm}, cases);
  });
}

TEST_P(CollectiveBadInputTest, InvalidRootOrPeer) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    Scratch buf(ctx.nranks);
    const int n = ctx.nranks;
    std::vector<BadCase> cases;
    for (int root : {-1, n, n + 7}) {
      const std::string value = std::to_string(root);
      for (Coll coll : kRootColls)
        cases.push_back({std::string(collCallName(coll)) + " with root " + value,
                         [&buf, coll, root, comm] {
                           return callWith(coll, buf.s(), buf.r(), 4, ncclInt32, ncclSum, root, comm);
                         },
                         {{collCallName(coll)}, {value}}});
      cases.push_back({"ncclSend to peer " + value,
                       [&buf, root, comm] { return sendWith(buf.s(), 4, ncclInt32, root, comm); },
                       {{"ncclSend"}, {value}}});
      cases.push_back({"ncclRecv from peer " + value,
                       [&buf, root, comm] { return recvWith(buf.r(), 4, ncclInt32, root, comm); },
                       {{"ncclRecv"}, {value}}});
    }
    runBadCases(ctx, {comm}, cases);
  });
}

TEST_P(CollectiveBadInputTest, CountOverflow) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    Scratch buf(ctx.nranks);
    const int n = ctx.nranks, peer = (ctx.rank + 1) % n;
    std::vector<BadCase> cases;
    // count * sizeof(float) overflows size_t.
    const size_t huge = SIZE_MAX / 2;
    const std::string hugeText = std::to_string(huge);
    for (Coll coll : kAllColls)
      cases.push_back({std::string(collCallName(coll)) + " with float count " + hugeText,
                       [&buf, coll, huge, comm] {
                         return callWith(coll, buf.s(), buf.r(), huge, ncclFloat32, ncclSum, 0, comm);
                       },
                       {{collCallName(coll)}, {hugeText, "overflow"}}});
    cases.push_back({"ncclSend with float count " + hugeText,
                     [&buf, huge, peer, comm] { return sendWith(buf.s(), huge, ncclFloat32, peer, comm); },
                     {{"ncclSend"}, {hugeText, "overflow"}}});
    cases.push_back({"ncclRecv with float count " + hugeText,
                     [&buf, huge, peer, comm] { return recvWith(buf.r(), huge, ncclFloat32, peer, comm); },
                     {{"ncclRecv"}, {hugeText, "overflow"}}});
    // count * sizeof(int8) fits, but nranks * count (the gathered / scattered buffer) does not.
    if (n >= 2) {
      const size_t perRank = SIZE_MAX / static_cast<size_t>(n) + 1;
      const std::string text = std::to_string(perRank);
      for (Coll coll :
           {Coll::kAllGather, Coll::kReduceScatter, Coll::kAlltoAll, Coll::kGather, Coll::kScatter})
        cases.push_back({std::string(collCallName(coll)) + " with int8 count " + text + " on " +
                             std::to_string(n) + " ranks",
                         [&buf, coll, perRank, comm] {
                           return callWith(coll, buf.s(), buf.r(), perRank, ncclInt8, ncclSum, 0, comm);
                         },
                         {{collCallName(coll)}, {text, "overflow"}}});
    }
    runBadCases(ctx, {comm}, cases);
  });
}

TEST_P(CollectiveBadInputTest, NullBuffers) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    Scratch buf(ctx.nranks);
    const int n = ctx.nranks, peer = (ctx.rank + 1) % n;
    const bool single = n == 1;  // buffers only the root uses can be NULL-checked symmetrically
    std::vector<BadCase> cases;
    auto add = [&](Coll coll, bool nullSend, bool nullRecv) {
      std::string what = std::string(collCallName(coll)) + " with " +
                         (nullSend && nullRecv ? "NULL sendbuff and recvbuff"
                          : nullSend           ? "NULL sendbuff"
                                               : "NULL recvbuff") +
                         " and count 4";
      cases.push_back({what,
                       [&buf, coll, nullSend, nullRecv, comm] {
                         return callWith(coll, nullSend ? nullptr : buf.s(), nullRecv ? nullptr : buf.r(), 4,
                                         ncclFloat32, ncclSum, 0, comm);
                       },
                       {{collCallName(coll)}, kNullWords}});
    };
    add(Coll::kAllReduce, true, false);
    add(Coll::kAllReduce, false, true);
    add(Coll::kAllReduce, true, true);
    add(Coll::kReduce, true, false);
    if (single) add(Coll::kReduce, false, true);
    add(Coll::kBroadcast, false, true);
    if (single) add(Coll::kBroadcast, true, false);
    add(Coll::kBcast, true, true);
    add(Coll::kReduceScatter, true, false);
    add(Coll::kReduceScatter, false, true);
    add(Coll::kAllGather, true, false);
    add(Coll::kAllGather, false, true);
    add(Coll::kAlltoAll, true, false);
    add(Coll::kAlltoAll, false, true);
    add(Coll::kGather, true, false);
    if (single) add(Coll::kGather, false, true);
    add(Coll::kScatter, false, true);
    if (single) add(Coll::kScatter, true, false);
    cases.push_back({"ncclSend with NULL sendbuff and count 4",
                     [peer, comm] { return sendWith(nullptr, 4, ncclFloat32, peer, comm); },
                     {{"ncclSend"}, kNullWords}});
    cases.push_back({"ncclRecv with NULL recvbuff and count 4",
                     [peer, comm] { return recvWith(nullptr, 4, ncclFloat32, peer, comm); },
                     {{"ncclRecv"}, kNullWords}});
    runBadCases(ctx, {comm}, cases);
  });
}

// Not bad input: count 0 needs no buffers at all.
TEST_P(CollectiveBadInputTest, ZeroCountAcceptsNullBuffers) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    const int n = ctx.nranks;
    for (Coll coll : kAllColls) {
      ncclResult_t res = callWith(coll, nullptr, nullptr, 0, ncclFloat32, ncclSum, n - 1, comm);
      ctx.check(res == ncclSuccess,
                "rank %d: %s with count 0 and NULL buffers returned %d (%s); last error: %s", ctx.rank,
                collCallName(coll), res, ncclGetErrorString(res), ncclGetLastError(nullptr));
    }
    RANK_NCCL_OK(ctx, ncclGroupStart());
    RANK_NCCL_OK(ctx, ncclSend(nullptr, 0, ncclFloat32, (ctx.rank + 1) % n, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclRecv(nullptr, 0, ncclFloat32, (ctx.rank + n - 1) % n, comm, nullptr));
    RANK_NCCL_OK(ctx, ncclGroupEnd());
    verifyCommWorks(ctx, comm, "after count-0 calls with NULL buffers");
  });
}

// Not bad input: the buffers NCCL documents as unused on non-root ranks may be NULL there.
TEST_P(CollectiveBadInputTest, UnusedBuffersMayBeNull) {
  if (nranks() == 1) GTEST_SKIP() << "needs a non-root rank";
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    const int n = ctx.nranks, r = ctx.rank, root = n - 1;
    const bool isRoot = r == root;
    constexpr int kCount = 5;
    std::vector<int32_t> send(kCount * n), recv(kCount * n, -7);
    auto value = [](int rank, int i) { return 100 * rank + i; };
    auto reset = [&] {
      for (int i = 0; i < kCount * n; ++i) send[i] = value(r, i), recv[i] = -7;
    };
    // Reduce: recvbuff NULL off the root.
    reset();
    if (RANK_NCCL_OK(ctx, ncclReduce(send.data(), isRoot ? recv.data() : nullptr, kCount, ncclInt32, ncclSum,
                                     root, comm, nullptr)) &&
        isRoot)
      for (int i = 0; i < kCount; ++i)
        ctx.check(recv[i] == 100 * n * (n - 1) / 2 + n * i,
                  "Reduce with NULL recvbuff off the root: [%d] = %d", i, recv[i]);
    // Broadcast: sendbuff NULL off the root.
    reset();
    if (RANK_NCCL_OK(ctx, ncclBroadcast(isRoot ? send.data() : nullptr, recv.data(), kCount, ncclInt32, root,
                                        comm, nullptr)))
      for (int i = 0; i < kCount; ++i)
        ctx.check(recv[i] == value(root, i), "rank %d: Broadcast with NULL sendbuff off the root: [%d] = %d",
                  r, i, recv[i]);
    // Gather: recvbuff NULL off the root.
    reset();
    if (RANK_NCCL_OK(ctx, ncclGather(send.data(), isRoot ? recv.data() : nullptr, kCount, ncclInt32, root,
                                     comm, nullptr)) &&
        isRoot)
      for (int q = 0; q < n; ++q)
        for (int i = 0; i < kCount; ++i)
          ctx.check(recv[q * kCount + i] == value(q, i), "Gather with NULL recvbuff off the root: [%d] = %d",
                    q * kCount + i, recv[q * kCount + i]);
    // Scatter: sendbuff NULL off the root.
    reset();
    if (RANK_NCCL_OK(ctx, ncclScatter(isRoot ? send.data() : nullptr, recv.data(), kCount, ncclInt32, root,
                                      comm, nullptr)))
      for (int i = 0; i < kCount; ++i)
        ctx.check(recv[i] == value(root, r * kCount + i),
                  "rank %d: Scatter with NULL sendbuff off the root: [%d] = %d", r, i, recv[i]);
  });
}

TEST_P(CollectiveBadInputTest, PreMulSumHandles) {
  // Every rank's handle (they differ: handles are mangled per communicator), for the message
  // checks in thread mode, where ranks share ncclGetLastError. INT_MIN: not created yet.
  auto handles = std::make_shared<std::vector<std::atomic<int>>>(nranks());
  for (std::atomic<int>& h : *handles) h = INT_MIN;
  auto anyHandle = [handles] {
    std::vector<std::string> out;
    for (const std::atomic<int>& h : *handles)
      if (h.load() != INT_MIN) out.push_back(std::to_string(h.load()));
    return out;
  };
  runOnComm(
      [handles, anyHandle](RankContext& ctx, ncclComm_t commA) {
        ncclComm_t commB = nullptr;
        if (!RANK_NCCL_OK(ctx, ncclCommInitRank(&commB, ctx.nranks, ctx.ids()[1], ctx.rank))) return;
        ctx.registerComm(commB);
        Scratch buf(ctx.nranks);
        const int n = ctx.nranks;
        float scalar = static_cast<float>(1 + ctx.rank % 2);
        ncclRedOp_t opA = ncclSum;
        ncclRedOp_t scratchOp = ncclSum;
        bool created = RANK_NCCL_OK(
            ctx, ncclRedOpCreatePreMulSum(&opA, &scalar, ncclFloat32, ncclScalarHostImmediate, commA));
        if (created) {
          (*handles)[ctx.rank] = static_cast<int>(opA);
          std::vector<BadCase> cases = {
              {"ncclAllReduce on comm B with a PreMulSum op of comm A",
               [&, commB] { return ncclAllReduce(buf.s(), buf.r(), 4, ncclFloat32, opA, commB, nullptr); },
               {{"ncclAllReduce"}},
               ncclInvalidArgument,
               anyHandle},
              {"ncclReduceScatter on comm B with a PreMulSum op of comm A",
               [&, commB] {
                 return ncclReduceScatter(buf.s(), buf.r(), 4, ncclFloat32, opA, commB, nullptr);
               },
               {{"ncclReduceScatter"}},
               ncclInvalidArgument,
               anyHandle},
              {"ncclRedOpDestroy on comm B of a PreMulSum op of comm A",
               [&, commB] { return ncclRedOpDestroy(opA, commB); },
               {{"ncclRedOpDestroy"}},
               ncclInvalidArgument,
               anyHandle},
              {"ncclAllReduce of int32 data with a float PreMulSum op",
               [&, commA] { return ncclAllReduce(buf.s(), buf.r(), 4, ncclInt32, opA, commA, nullptr); },
               {{"ncclAllReduce"}}},
              {"ncclRedOpDestroy of the built-in ncclSum",
               [commA] { return ncclRedOpDestroy(ncclSum, commA); },
               {{"ncclRedOpDestroy"}}},
              {"ncclRedOpCreatePreMulSum with datatype 99",
               [&, commA] {
                 return ncclRedOpCreatePreMulSum(&scratchOp, &scalar, static_cast<ncclDataType_t>(99),
                                                 ncclScalarHostImmediate, commA);
               },
               {{"ncclRedOpCreatePreMulSum"}, {"99"}}},
              {"ncclRedOpCreatePreMulSum with residence 7",
               [&, commA] {
                 return ncclRedOpCreatePreMulSum(&scratchOp, &scalar, ncclFloat32,
                                                 static_cast<ncclScalarResidence_t>(7), commA);
               },
               {{"ncclRedOpCreatePreMulSum"}, {"7"}}},
              {"ncclRedOpCreatePreMulSum with a NULL scalar",
               [&, commA] {
                 return ncclRedOpCreatePreMulSum(&scratchOp, nullptr, ncclFloat32, ncclScalarHostImmediate,
                                                 commA);
               },
               {{"ncclRedOpCreatePreMulSum"}, kNullWords}},
              {"ncclRedOpCreatePreMulSum with a NULL op pointer",
               [&, commA] {
                 return ncclRedOpCreatePreMulSum(nullptr, &scalar, ncclFloat32, ncclScalarHostImmediate,
                                                 commA);
               },
               {{"ncclRedOpCreatePreMulSum"}, kNullWords}},
          };
          if (runBadCases(ctx, {commA, commB}, cases)) {
            // The op still works on its own communicator: sum over ranks of (1 + r%2) * (i + 1).
            float in[4], out[4];
            for (int i = 0; i < 4; ++i) in[i] = static_cast<float>(i + 1), out[i] = -1;
            if (RANK_NCCL_OK(ctx, ncclAllReduce(in, out, 4, ncclFloat32, opA, commA, nullptr))) {
              const int scaleSum = n + n / 2;  // ranks 0..n-1 contribute 1 (even) or 2 (odd)
              for (int i = 0; i < 4; ++i)
                ctx.check(out[i] == static_cast<float>(scaleSum * (i + 1)),
                          "rank %d: PreMulSum AllReduce on its own comm: [%d] = %g, expected %d", ctx.rank, i,
                          out[i], scaleSum * (i + 1));
            }
            RANK_NCCL_OK(ctx, ncclRedOpDestroy(opA, commA));
            runBadCases(
                ctx, {commA, commB},
                {{"ncclRedOpDestroy of an op destroyed already",
                  [&, commA] { return ncclRedOpDestroy(opA, commA); },
                  {{"ncclRedOpDestroy"}},
                  ncclInvalidArgument,
                  anyHandle},
                 {"ncclAllReduce with a destroyed PreMulSum op",
                  [&, commA] { return ncclAllReduce(buf.s(), buf.r(), 4, ncclFloat32, opA, commA, nullptr); },
                  {{"ncclAllReduce"}},
                  ncclInvalidArgument,
                  anyHandle}});
          }
        }
        RANK_NCCL_OK(ctx, ctx.destroyComm(commB));
      },
      2);
}

TEST_P(CollectiveBadInputTest, BadCallInsideGroup) {
  runOnComm([](RankContext& ctx, ncclComm_t comm) {
    Scratch buf(ctx.nranks);
    const int n = ctx.nranks;
    // The bad call fails inside the group, and ncclGroupEnd reports the group's error without
    // running anything queued in it.
    auto grouped = [&ctx, &buf, comm](const char* what, bool withValidFirst,
                                      std::function<ncclResult_t()> bad) {
      return [&ctx, &buf, comm, what, withValidFirst, bad] {
        ncclResult_t res = ncclGroupStart();
        if (res != ncclSuccess) return res;
        if (withValidFirst)
          RANK_NCCL_OK(ctx, ncclAllReduce(buf.s(), buf.r(), 4, ncclFloat32, ncclSum, comm, nullptr));
        ncclResult_t inGroup = bad();
        ctx.check(inGroup == ncclInvalidArgument, "rank %d: %s: the call inside the group returned %d (%s)",
                  ctx.rank, what, inGroup, ncclGetErrorString(inGroup));
        return ncclGroupEnd();
      };
    };
    std::vector<BadCase> cases = {
        {"ncclGroupEnd after an ncclAllReduce with datatype 99",
         grouped("ncclAllReduce with datatype 99", false,
                 [&buf, comm] {
                   return ncclAllReduce(buf.s(), buf.r(), 4, static_cast<ncclDataType_t>(99), ncclSum, comm,
                                        nullptr);
                 }),
         {}},
        {"ncclGroupEnd after a valid ncclAllReduce and an ncclReduce with root -1",
         grouped("ncclReduce with root -1", true,
                 [&buf, comm] {
                   return ncclReduce(buf.s(), buf.r(), 4, ncclFloat32, ncclSum, -1, comm, nullptr);
                 }),
         {}},
        {"ncclGroupEnd after an ncclSend to peer nranks",
         grouped("ncclSend to peer nranks", false,
                 [&buf, comm, n] { return ncclSend(buf.s(), 4, ncclFloat32, n, comm, nullptr); }),
         {}},
    };
    runBadCases(ctx, {comm}, cases);
  });
}

INSTANTIATE_TEST_SUITE_P(, CollectiveBadInputTest,
                         testing::Values(MpParam{LaunchMode::kFork, 1}, MpParam{LaunchMode::kFork, 3},
                                         MpParam{LaunchMode::kThreads, 2}),
                         mpParamName);

}  // namespace
}  // namespace accl::test
