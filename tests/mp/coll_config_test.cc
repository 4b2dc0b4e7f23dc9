// The nccl*Config collectives on the host backend (label mp):
//   Results     every Config collective, checked element by element against closed-form values
//               (collective_expect.h), counts 0 / 1 / odd / multi-chunk, in place and out of place,
//               with per-call algSelection "ring" and "tree" alternating call by call on one
//               communicator (tree where the host has it: AllReduce), and NULL configs.
//   Honoured    forked ranks log their COLL lines to their own NCCL_DEBUG_FILE; the test reads
//               them back: the algorithm each call asked for, the channels min/maxCTAs asked for,
//               the profiler tag, and plain calls unaffected by the per-call ones (choice cache).
//   Errors      bad magic, short size, min > max, bounds out of range, forceAlgSelection not 0/1,
//               launchCompletionEvent, ext cycles, unsatisfiable or unparsable selections with
//               force = 1 (error naming the call and the string) and force = 0 (runs), fields past
//               a short size ignored, and a bad config inside a group queues nothing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "mp/collective_expect.h"
#include "mp/collective_runner.h"
#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

// Simple slots of NCCL_BUFFSIZE=8192 carry 1 KiB: 4099 elements span many chunks.
const char* const kSmallBuffSize = "8192";
const std::vector<size_t> kCounts = {0, 1, 7, 4099};
constexpr int kCommChannels = 4;  // ncclConfig_t.minCTAs of the communicators below

ncclCollConfig_t selection(const char* algo, int force = 1) {
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  c.algSelection = algo;
  c.forceAlgSelection = force;
  return c;
}

bool initChannelComm(RankContext& ctx, ncclComm_t* comm) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.minCTAs = kCommChannels;
  return initComm(ctx, comm, &config);
}

// ---- Results ------------------------------------------------------------------------------------

class CollConfigResultsTest : public MpTest {};

void runResults(RankContext& ctx) {
  ncclComm_t comm = nullptr;
  if (!initChannelComm(ctx, &comm)) return;
  const ncclCollConfig_t ring = selection("ring");
  const ncclCollConfig_t tree = selection("tree");
  ncclCollConfig_t ringTwoChannels = selection("ring");
  ringTwoChannels.minCTAs = ringTwoChannels.maxCTAs = 2;
  CollectiveRunner viaRing(ctx, comm, "ring", CallVia{true, &ring});
  CollectiveRunner viaTree(ctx, comm, "tree", CallVia{true, &tree});
  CollectiveRunner viaRing2(ctx, comm, "ring,2ch", CallVia{true, &ringTwoChannels});
  CollectiveRunner viaNull(ctx, comm, "NULL config", CallVia{true, nullptr});
  int k = 0;
  bool ok = true;
  for (Coll coll : kAllColls) {
    for (size_t count : kCounts) {
      for (bool inPlace : {false, true}) {
        if (inPlace ? !collAllowsInPlace(coll) : !collAllowsOutOfPlace(coll)) continue;
        CaseSpec cs;
        cs.coll = coll;
        cs.type = (k % 2) ? ncclInt32 : ncclFloat32;
        cs.op = collReduces(coll) ? (k % 3 == 0 ? Op::kMax : Op::kSum) : Op::kNone;
        cs.count = count;
        cs.inPlace = inPlace;
        cs.root = collHasRoot(coll) ? (k % ctx.nranks) : 0;
        // AllReduce alternates ring / tree / ring on two channels / NULL call by call; the others
        // alternate ring / ring on two channels / NULL (the host has no tree for them).
        CollectiveRunner* runners[] = {&viaRing, &viaTree, &viaRing2, &viaNull};
        int pick = k % 4;
        if (coll != Coll::kAllReduce && pick == 1) pick = 0;
        ok = runners[pick]->run(cs);
        ++k;
        if (!ok) break;
      }
      if (!ok) break;
    }
    if (!ok) break;
  }
  for (CollectiveRunner* r : {&viaRing, &viaTree, &viaRing2, &viaNull}) r->finish(r->casesRun());
  if (!ok) {
    ctx.abortComm(comm);
    return;
  }
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
}

TEST_P(CollConfigResultsTest, EveryCollectiveExact) {
  // Environment before the launch: forked ranks inherit it, thread ranks share it.
  setenv("NCCL_BUFFSIZE", kSmallBuffSize, 1);
  LaunchResult res = launchRanks(options(), runResults);
  unsetenv("NCCL_BUFFSIZE");
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, CollConfigResultsTest,
                         testing::Values(MpParam{LaunchMode::kThreads, 1}, MpParam{LaunchMode::kThreads, 3},
                                         MpParam{LaunchMode::kThreads, 5}, MpParam{LaunchMode::kFork, 2},
                                         MpParam{LaunchMode::kFork, 3}),
                         mpParamName);

// ---- Honoured -----------------------------------------------------------------------------------

// One AllReduce of the log test and what its COLL line must say.
struct LoggedCall {
  const char* selection;  // nullptr: no config at all (plain call); "" : config without selection
  int minCTAs, maxCTAs;   // NCCL_CONFIG_UNDEF_INT: unset
  size_t count;
  const char* wantAlgo;  // nullptr: not checked
  int wantChannels;      // 0: not checked
  bool nullConfig = false;  // ncclAllReduceConfig(..., NULL)
};

constexpr int U = NCCL_CONFIG_UNDEF_INT;
constexpr size_t kBig = 1 << 16;  // 256 KiB of floats: the tuner spreads it over 4 channels
const LoggedCall kLoggedCalls[] = {
    {nullptr, U, U, 5, nullptr, 0},         // 0: plain, small: whatever the tuner picks (compared below)
    {"ring", U, U, 5, "Ring", 1},           // 1
    {"tree", U, U, 5, "Tree", 1},           // 2
    {nullptr, U, U, 5, nullptr, 0},         // 3: plain again: same choice as call 0
    {"^ring,tree", U, U, 5, "OneShot", 1},  // 4: what is left on the host
    {"", U, U, 5, nullptr, 0, true},        // 5: NULL config
    {"ring", U, 1, kBig, "Ring", 1},        // 6: maxCTAs = 1
    {"ring", U, U, kBig, "Ring", 4},        // 7: unbounded: the tuner's 4
    {"ring", 3, U, 5, "Ring", 3},           // 8: minCTAs = 3 for a tiny call
    {"tree", 2, 2, kBig, "Tree", 2},        // 9
    {"nvls", U, U, 5, nullptr, 0},          // 10: force = 0 below: automatic
    {"", U, U, 5, nullptr, 0},              // 11: config, no selection: automatic
};
constexpr int kNumLoggedCalls = sizeof(kLoggedCalls) / sizeof(kLoggedCalls[0]);

std::string logPath(const std::string& dir, int rank) { return dir + "/rank" + std::to_string(rank) + ".log"; }

// The COLL lines of AllReduce, in order.
std::vector<std::string> allReduceLines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.find("NCCL INFO AllReduce: opCount") != std::string::npos) out.push_back(line);
  return out;
}

// A forked rank inherits the parent's parsed log settings: re-read them (deprecated in NCCL, but
// the only public way to point a running process's log elsewhere).
void reloadLogSettings() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
}

std::string field(const std::string& line, const std::string& key) {
  size_t at = line.find(" " + key + " ");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  size_t end = line.find(' ', at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

void runHonoured(RankContext& ctx, const std::string& dir) {
  // Fork child: this process's log goes to its own file.
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "COLL", 1);
  setenv("NCCL_DEBUG_FILE", logPath(dir, ctx.rank).c_str(), 1);
  reloadLogSettings();
  ncclComm_t comm = nullptr;
  if (!initChannelComm(ctx, &comm)) return;
  std::vector<float> send(kBig), recv(kBig);
  const int n = ctx.nranks;
  for (int i = 0; i < kNumLoggedCalls; ++i) {
    const LoggedCall& lc = kLoggedCalls[i];
    for (size_t j = 0; j < lc.count; ++j) send[j] = static_cast<float>(ctx.rank + 1 + (j % 5));
    ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
    config.algSelection = lc.selection && lc.selection[0] ? lc.selection : nullptr;
    config.minCTAs = lc.minCTAs;
    config.maxCTAs = lc.maxCTAs;
    config.userProfilerTag = 1000 + i;
    if (i == 10) config.forceAlgSelection = 0;
    ncclResult_t res;
    if (lc.selection == nullptr)
      res = ncclAllReduce(send.data(), recv.data(), lc.count, ncclFloat32, ncclSum, comm, nullptr);
    else
      res = ncclAllReduceConfig(send.data(), recv.data(), lc.count, ncclFloat32, ncclSum, comm, nullptr,
                                lc.nullConfig ? nullptr : &config);
    if (!RANK_NCCL_EXPECT(ctx, res, ncclSuccess)) {
      ctx.fail("call %d failed; stopping", i);
      ctx.abortComm(comm);
      return;
    }
    // sum over ranks of (r + 1 + j%5) = n(n+1)/2 + n*(j%5)
    size_t wrong = 0;
    for (size_t j = 0; j < lc.count; ++j)
      if (recv[j] != static_cast<float>(n * (n + 1) / 2 + n * (j % 5))) ++wrong;
    ctx.check(wrong == 0, "call %d: %zu of %zu elements wrong", i, wrong, lc.count);
  }
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  reloadLogSettings();  // closes (flushes) the log file

  const std::vector<std::string> lines = allReduceLines(logPath(dir, ctx.rank));
  if (!ctx.check(lines.size() == kNumLoggedCalls, "rank %d: %zu AllReduce COLL lines in %s, expected %d", ctx.rank,
                 lines.size(), logPath(dir, ctx.rank).c_str(), kNumLoggedCalls))
    return;
  for (int i = 0; i < kNumLoggedCalls; ++i) {
    const LoggedCall& lc = kLoggedCalls[i];
    const std::string& line = lines[i];
    if (lc.wantAlgo)
      ctx.check(field(line, "algo") == lc.wantAlgo, "call %d (%s): algo %s, wanted %s: %s", i, lc.selection,
                field(line, "algo").c_str(), lc.wantAlgo, line.c_str());
    if (lc.wantChannels)
      ctx.check(field(line, "nChannels") == std::to_string(lc.wantChannels), "call %d: nChannels %s, wanted %d: %s",
                i, field(line, "nChannels").c_str(), lc.wantChannels, line.c_str());
    const bool configured = lc.selection != nullptr && !lc.nullConfig;
    const bool hasMarker = line.find(" config") != std::string::npos;
    ctx.check(hasMarker == configured, "call %d: 'config' marker %s: %s", i, hasMarker ? "present" : "absent",
              line.c_str());
    char tag[32];
    std::snprintf(tag, sizeof(tag), "0x%x", configured ? 1000 + i : 0);
    ctx.check(field(line, "profilerTag") == tag, "call %d: profilerTag %s, wanted %s", i,
              field(line, "profilerTag").c_str(), tag);
  }
  // Per-call selections left the plain calls' choice alone, and force = 0 / no selection ran the
  // automatic choice.
  const std::string autoAlgo = field(lines[0], "algo");
  for (int i : {3, 5, 10, 11})
    ctx.check(field(lines[i], "algo") == autoAlgo, "call %d: algo %s, but the automatic choice is %s", i,
              field(lines[i], "algo").c_str(), autoAlgo.c_str());
  ctx.note("rank %d: automatic choice for 20 bytes: %s", ctx.rank, autoAlgo.c_str());
}

class CollConfigHonouredTest : public testing::TestWithParam<int> {};

TEST_P(CollConfigHonouredTest, SelectionChannelsAndTagInTheLog) {
  char tmpl[] = "/tmp/accl-collconfig-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  LaunchOptions opts;
  opts.mode = LaunchMode::kFork;
  opts.nranks = GetParam();
  opts.deadline = mpDeadline(opts.nranks);
  opts.ids = makeUniqueIds(1);
  LaunchResult res = launchRanks(opts, [&](RankContext& ctx) { runHonoured(ctx, dir); });
  EXPECT_RANKS_OK(res);
  for (int r = 0; r < opts.nranks; ++r) unlink(logPath(dir, r).c_str());
  rmdir(dir.c_str());
}

INSTANTIATE_TEST_SUITE_P(, CollConfigHonouredTest, testing::Values(3, 4),
                         [](const testing::TestParamInfo<int>& info) { return "Fork_" + std::to_string(info.param); });

// ---- Errors -------------------------------------------------------------------------------------

// One rejected call: the code, and words the last error must contain.
bool expectRejected(RankContext& ctx, ncclResult_t got, ncclResult_t want, const char* what,
                    std::initializer_list<const char*> words) {
  bool ok = ctx.check(got == want, "%s: returned %d (%s), expected %d (%s); last error: %s", what, got,
                      ncclGetErrorString(got), want, ncclGetErrorString(want), ncclGetLastError(nullptr));
  for (const char* w : words)
    ok &= ctx.check(lastErrorContains(w), "%s: the last error does not mention \"%s\": %s", what, w,
                    ncclGetLastError(nullptr));
  return ok;
}

void runErrors(RankContext& ctx) {
  ncclComm_t comm = nullptr;
  ncclConfig_t commConfig = NCCL_CONFIG_INITIALIZER;
  commConfig.minCTAs = 2;
  commConfig.maxCTAs = 8;
  if (!initComm(ctx, &comm, &commConfig)) return;
  const int n = ctx.nranks;
  std::vector<int32_t> send(64, ctx.rank + 1), recv(64, -1);
  auto allReduce = [&](const ncclCollConfig_t* c) {
    std::fill(recv.begin(), recv.end(), -1);
    return ncclAllReduceConfig(send.data(), recv.data(), send.size(), ncclInt32, ncclSum, comm, nullptr, c);
  };
  auto resultOk = [&](const char* what) {
    for (int32_t v : recv)
      if (v != n * (n + 1) / 2) return ctx.check(false, "%s: got %d, expected %d", what, v, n * (n + 1) / 2);
    return true;
  };

  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  c.magic = 0x12345678;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "bad magic",
                 {"ncclAllReduceConfig", "magic", "NCCL_COLLCONFIG_INITIALIZER"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.size = 8;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "size 8", {"ncclAllReduceConfig", "config->size"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.minCTAs = 4;
  c.maxCTAs = 2;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "min > max", {"config->minCTAs = 4", "config->maxCTAs = 2"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.maxCTAs = 9;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "maxCTAs above the comm's", {"config->maxCTAs = 9"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.minCTAs = 0;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "minCTAs 0", {"config->minCTAs = 0"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.forceAlgSelection = 2;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "force 2", {"config->forceAlgSelection = 2"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.CTAPolicy = 0x10;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "CTAPolicy 0x10", {"config->CTAPolicy"});
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.launchCompletionEvent = reinterpret_cast<cudaEvent_t>(0x1);
  expectRejected(ctx, allReduce(&c), ncclInvalidUsage, "launchCompletionEvent",
                 {"config->launchCompletionEvent", "host backend", "CUDA stream"});
  ncclConfigExt_t loop[2];
  loop[0].next = &loop[1];
  loop[1].next = &loop[0];
  loop[0].key.vendorId = loop[1].key.vendorId = 77;
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.ext = loop;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "ext cycle", {"config->ext"});
  c = selection("nvls");
  expectRejected(ctx, allReduce(&c), ncclInvalidUsage, "nvls forced", {"ncclAllReduceConfig", "\"nvls\""});
  c = selection("bogus");
  expectRejected(ctx, allReduce(&c), ncclInvalidUsage, "unparsable forced", {"ncclAllReduceConfig", "bogus"});
  c = selection("tree");
  std::vector<int32_t> bsend(9, 42), brecv(9, 0);
  expectRejected(ctx,
                 ncclBroadcastConfig(bsend.data(), brecv.data(), brecv.size(), ncclInt32, 0, comm, nullptr, &c),
                 ncclInvalidUsage, "broadcast tree forced", {"ncclBroadcastConfig", "\"tree\"", "Broadcast"});

  // Accepted: the same selections unforced, vendor options, fields past a short size, and the
  // fields without meaning on the host.
  c = selection("nvls", 0);
  RANK_NCCL_OK(ctx, allReduce(&c)) && resultOk("nvls unforced");
  c = selection("bogus", 0);
  RANK_NCCL_OK(ctx, allReduce(&c)) && resultOk("unparsable unforced");
  c = selection("tree", 0);
  RANK_NCCL_OK(ctx, ncclBroadcastConfig(bsend.data(), brecv.data(), brecv.size(), ncclInt32, 0, comm, nullptr, &c));
  for (int32_t v : brecv) ctx.check(v == 42, "broadcast tree unforced: got %d", v);
  ncclConfigExt_t vendor[2];
  vendor[0].next = &vendor[1];
  vendor[1].next = nullptr;
  vendor[0].key.vendorId = vendor[1].key.vendorId = 0x5eed;
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.ext = vendor;
  c.nvlsCTAs = 4;
  c.cgaClusterSize = 2;
  c.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  RANK_NCCL_OK(ctx, allReduce(&c)) && resultOk("vendor options and GPU-only fields");
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.size = offsetof(ncclCollConfig_t, algSelection);  // a caller that knows nothing past cgaClusterSize
  c.algSelection = "nvls";
  c.forceAlgSelection = 7;
  c.launchCompletionEvent = reinterpret_cast<cudaEvent_t>(0x1);
  RANK_NCCL_OK(ctx, allReduce(&c)) && resultOk("short struct");

  // A bad config inside a group queues nothing: the group fails, and the next call is alone.
  RANK_NCCL_OK(ctx, ncclGroupStart());
  c = NCCL_COLLCONFIG_INITIALIZER;
  c.magic = 0;
  expectRejected(ctx, allReduce(&c), ncclInvalidArgument, "bad magic in a group", {"magic"});
  ncclResult_t end = ncclGroupEnd();
  ctx.check(end != ncclSuccess, "ncclGroupEnd after a rejected call returned success");
  RANK_NCCL_OK(ctx, allReduce(nullptr)) && resultOk("after the failed group");
  // Inside a group, good Config calls run like plain ones.
  c = selection("ring");
  std::vector<int32_t> recv2(64, -1);
  RANK_NCCL_OK(ctx, ncclGroupStart());
  RANK_NCCL_OK(ctx, ncclAllReduceConfig(send.data(), recv.data(), send.size(), ncclInt32, ncclSum, comm, nullptr, &c));
  RANK_NCCL_OK(ctx, ncclAllReduce(send.data(), recv2.data(), send.size(), ncclInt32, ncclSum, comm, nullptr));
  RANK_NCCL_OK(ctx, ncclGroupEnd());
  resultOk("grouped Config call");
  for (int32_t v : recv2) ctx.check(v == n * (n + 1) / 2, "grouped plain call: got %d", v);
  RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
}

class CollConfigErrorsTest : public MpTest {};

TEST_P(CollConfigErrorsTest, RejectedAndAccepted) {
  LaunchResult res = launchRanks(options(), runErrors);
  EXPECT_RANKS_OK(res);
}

INSTANTIATE_TEST_SUITE_P(, CollConfigErrorsTest,
                         // One process per rank: ncclGetLastError is process-wide.
                         testing::Values(MpParam{LaunchMode::kThreads, 1}, MpParam{LaunchMode::kFork, 3}),
                         mpParamName);

}  // namespace
}  // namespace accl::test
