// Issue 20 without namespaces (label mp): two forked ranks on two virtual hosts (NCCL_HOSTID)
// whose only path is the net transport over the strict v6 plugin acclStrictV6 on loopback
// (accl_strict_v6_net.cc: blocking accept, in-order completion, no sizes from test, one buffer per
// receive, host memory only).
//   StrictNetCollectives.InNcclDriveOrder/<proto>  NCCL's drive order: all-reduces of awkward
//        counts (many FIFO steps), in and out of place, and a send/recv exchange, closed-form checked
//   StrictNetOldDriveOrder.AcceptFirstFails   ACCL_CONNECT_ORDER=recv-first (accl's order before
//        issue 20): both ranks wait in the plugin's accept, which gives up after 2 s; the
//        collective fails naming the accept instead of hanging
//   StrictNetOldDriveOrder.AnyTestOrderFails  ACCL_NET_TEST_ORDER=any: the proxy tests a step header
//        before the payload posted ahead of it; the plugin's error fails the collective
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "mp/mp_test_util.h"
#include "support/scoped_env.h"

namespace accl::test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kManyStepCount = 100003;  // ~400 KB: dozens of 64 KiB Simple steps
constexpr double kFailBoundS = 30;

// The environment of one launch: the strict plugin on lo, small FIFOs, and `extra` on top.
class StrictEnv {
 public:
  StrictEnv(const char* proto, std::vector<std::pair<const char*, const char*>> extra) {
    std::vector<std::pair<const char*, const char*>> all = {
        {"NCCL_NET_PLUGIN", ACCL_STRICT_NET_PLUGIN}, {"NCCL_NET", "acclStrictV6"}, {"ACCL_TEST_NET_IFNAME", "lo"},
        {"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", proto}, {"NCCL_BUFFSIZE", "65536"},
        {"NCCL_LL_BUFFSIZE", "16384"}, {"NCCL_HOSTID", nullptr}, {"NCCL_P2P_DISABLE", nullptr},
        {"NCCL_SHM_DISABLE", nullptr}, {"ACCL_CONNECT_ORDER", nullptr}, {"ACCL_NET_TEST_ORDER", nullptr},
        {"ACCL_STRICT_NET_ACCEPT_MS", "20000"}};
    all.insert(all.end(), extra.begin(), extra.end());
    for (auto [name, value] : all) vars_.push_back(std::make_unique<ScopedEnvVar>(name, value));
  }

 private:
  std::vector<std::unique_ptr<ScopedEnvVar>> vars_;
};

LaunchOptions twoHosts() {
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = 2;
  opts.deadline = std::chrono::seconds(120);
  opts.ids = makeUniqueIds(1);
  return opts;
}

// Every rank body starts here: each rank is a host of its own, so they connect through the net.
void joinOwnHost(RankContext& ctx) { setenv("NCCL_HOSTID", ("strict-host" + std::to_string(ctx.rank)).c_str(), 1); }

float contribution(int rank, size_t j) { return static_cast<float>((rank + 1) * (j % 13 + 1)); }

// One float sum all-reduce of `count` elements, checked against the closed form; a guard element
// past the end must stay untouched.
void checkedAllReduce(RankContext& ctx, ncclComm_t comm, size_t count, bool inPlace) {
  std::vector<float> send(count + 1), recv(count + 1, -7.0f);
  for (size_t j = 0; j < count; ++j) send[j] = contribution(ctx.rank, j);
  send[count] = -3.0f;
  float* out = inPlace ? send.data() : recv.data();
  if (!RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), out, count, ncclFloat32, ncclSum, comm, nullptr))) return;
  size_t bad = 0;
  for (size_t j = 0; j < count; ++j) bad += out[j] != contribution(0, j) + contribution(1, j);
  ctx.check(bad == 0 && out[count] == (inPlace ? -3.0f : -7.0f),
            "rank %d: all-reduce of %zu floats (%s): %zu wrong elements, guard %g", ctx.rank, count,
            inPlace ? "in place" : "out of place", bad, out[count]);
}

void checkedExchange(RankContext& ctx, ncclComm_t comm, size_t count) {
  const int peer = 1 - ctx.rank;
  std::vector<int32_t> send(count), recv(count + 1, -5);
  for (size_t j = 0; j < count; ++j) send[j] = static_cast<int32_t>(ctx.rank * 1000003 + j * 7 + 1);
  RANK_NCCL_OK(ctx, ncclGroupStart());
  RANK_NCCL_OK(ctx, ncclSend(send.data(), count, ncclInt32, peer, comm, nullptr));
  RANK_NCCL_OK(ctx, ncclRecv(recv.data(), count, ncclInt32, peer, comm, nullptr));
  if (!RANK_NCCL_OK(ctx, ncclGroupEnd())) return;
  size_t bad = 0;
  for (size_t j = 0; j < count; ++j) bad += recv[j] != static_cast<int32_t>(peer * 1000003 + j * 7 + 1);
  ctx.check(bad == 0 && recv[count] == -5, "rank %d: send/recv of %zu int32: %zu wrong elements", ctx.rank, count,
            bad);
}

class StrictNetCollectives : public testing::TestWithParam<const char*> {};

TEST_P(StrictNetCollectives, InNcclDriveOrder) {
  StrictEnv env(GetParam(), {});
  LaunchResult res = launchRanks(twoHosts(), [&](RankContext& ctx) {
    joinOwnHost(ctx);
    ncclComm_t comm = nullptr;
    if (!initComm(ctx, &comm)) return;
    for (size_t count : {size_t(1), size_t(4099), kManyStepCount})
      for (bool inPlace : {false, true}) checkedAllReduce(ctx, comm, count, inPlace);
    for (size_t count : {size_t(0), size_t(7), kManyStepCount}) checkedExchange(ctx, comm, count);
    if (ctx.failed()) {
      ctx.abortComm(comm);
      return;
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, StrictNetCollectives, testing::Values("Simple", "LL"),
                         [](const testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// Runs all-reduces until one fails; records the failure's text as a note (each rank's first
// failing call must come within kFailBoundS and must not be a success forever).
void expectCollectiveFailure(RankContext& ctx) {
  joinOwnHost(ctx);
  ncclComm_t comm = nullptr;
  const auto start = Clock::now();
  ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks, ctx.id(), ctx.rank);
  if (comm) ctx.registerComm(comm);
  std::vector<float> buf(kManyStepCount, 1.0f);
  for (int it = 0; r == ncclSuccess && it < 20; ++it)
    r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string text = ncclGetLastError(comm);
  ctx.check(r != ncclSuccess, "rank %d: 20 all-reduces succeeded in the old drive order", ctx.rank);
  ctx.check(took < kFailBoundS, "rank %d: the failure took %.1f s (bound %.0f s)", ctx.rank, took, kFailBoundS);
  ctx.note("%s after %.2f s: %s", ncclGetErrorString(r), took, text.c_str());
  if (comm) ctx.abortComm(comm);
}

bool someNoteContains(const LaunchResult& res, const std::string& needle) {
  for (const RankOutcome& o : res.ranks)
    for (const std::string& n : o.notes)
      if (n.find(needle) != std::string::npos) return true;
  return false;
}

TEST(StrictNetOldDriveOrder, AcceptFirstFails) {
  StrictEnv env("Simple", {{"ACCL_CONNECT_ORDER", "recv-first"}, {"ACCL_STRICT_NET_ACCEPT_MS", "2000"}});
  LaunchResult res = launchRanks(twoHosts(), expectCollectiveFailure);
  EXPECT_RANKS_OK(res);
  EXPECT_TRUE(someNoteContains(res, "accepting the connection")) << res.summary();
}

TEST(StrictNetOldDriveOrder, AnyTestOrderFails) {
  StrictEnv env("Simple", {{"ACCL_NET_TEST_ORDER", "any"}});
  LaunchResult res = launchRanks(twoHosts(), expectCollectiveFailure);
  EXPECT_RANKS_OK(res);
  EXPECT_TRUE(someNoteContains(res, "receiving a step header")) << res.summary();
}

}  // namespace
}  // namespace accl::test
