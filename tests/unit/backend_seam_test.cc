// The backend seam (core/engine/backend.h): backend selection from ACCL_BACKEND and the devices present
// (with the fallback line of a CUDA build without a GPU), the per-communicator plan pool, and a
// real communicator driven through a stand-in asynchronous backend — two launches whose plans
// are in flight together, each with its streams, and an error raised after launch reported by
// ncclCommGetAsyncError — then through the host backend again.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/host/host_backend.h"
#include "core/engine/backend.h"
#include "core/comm/comm.h"
#include "core/comm/comm_memory.h"
#include "core/engine/engine.h"
#include "core/engine/plan_pool.h"
#include "device/device_probe.h"
#include "nccl.h"
#include "support/scoped_env.h"

namespace accl {
namespace {

// --- Selection ---

struct Choice {
  ncclResult_t res;
  Backend kind;
  std::string note;
};

Choice choose(const char* want, bool cudaBuild, int gpus) {
  Choice c{ncclSuccess, Backend::Host, "unset"};
  c.kind = Backend::Host;
  c.res = chooseBackend("test", want, cudaBuild, gpus, &c.kind, &c.note);
  return c;
}

TEST(BackendSelection, AutoPicksCudaOnlyWithACudaBuildAndAGpu) {
  for (const char* want : {"", "auto"}) {
    Choice gpu = choose(want, true, 2);
    EXPECT_EQ(gpu.res, ncclSuccess);
    EXPECT_EQ(gpu.kind, Backend::Cuda) << want;
    EXPECT_EQ(gpu.note, "") << want;
    Choice hostBuild = choose(want, false, 0);
    EXPECT_EQ(hostBuild.res, ncclSuccess);
    EXPECT_EQ(hostBuild.kind, Backend::Host) << want;
    EXPECT_EQ(hostBuild.note, "") << "a host-only build has nothing to fall back from";
  }
}

TEST(BackendSelection, CudaBuildWithoutGpuFallsBackToHostWithALine) {
  for (const char* want : {"", "auto"}) {
    Choice c = choose(want, true, 0);
    EXPECT_EQ(c.res, ncclSuccess);
    EXPECT_EQ(c.kind, Backend::Host) << want;
    EXPECT_NE(c.note.find("no CUDA device is visible"), std::string::npos) << c.note;
    EXPECT_NE(c.note.find("host backend"), std::string::npos) << c.note;
  }
}

TEST(BackendSelection, ExplicitHostAlwaysWorks) {
  for (bool cudaBuild : {false, true})
    for (int gpus : {0, 1}) {
      Choice c = choose("host", cudaBuild, gpus);
      EXPECT_EQ(c.res, ncclSuccess);
      EXPECT_EQ(c.kind, Backend::Host);
      EXPECT_EQ(c.note, "");
    }
}

TEST(BackendSelection, ExplicitCudaNeedsAGpu) {
  Choice ok = choose("cuda", true, 1);
  EXPECT_EQ(ok.res, ncclSuccess);
  EXPECT_EQ(ok.kind, Backend::Cuda);
  EXPECT_EQ(choose("cuda", true, 0).res, ncclInvalidUsage);
  EXPECT_EQ(choose("cuda", false, 0).res, ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("no CUDA support"), std::string::npos)
      << ncclGetLastError(nullptr);
}

TEST(BackendSelection, UnknownNameIsAnInvalidArgument) {
  for (const char* want : {"gpu", "HOST", " host", "cuda,host"}) {
    EXPECT_EQ(choose(want, true, 1).res, ncclInvalidArgument) << want;
    EXPECT_NE(std::string(ncclGetLastError(nullptr)).find(want), std::string::npos) << ncclGetLastError(nullptr);
  }
}

// --- Plan pool ---

void fillPlan(Plan& plan, int items) {
  for (int i = 0; i < items; ++i) plan.channels[0].push_back(PlanItem{});
  plan.nChannelsUsed = 1;
}

TEST(PlanPool, PlansInFlightTogetherAreDistinctAndCounted) {
  PlanPool pool;
  std::unique_ptr<Plan> a = pool.acquire(3);
  std::unique_ptr<Plan> b = pool.acquire(3);
  ASSERT_NE(a.get(), b.get());
  EXPECT_EQ(pool.lent(), 2);
  EXPECT_EQ(a->channels.size(), 3u);
  fillPlan(*a, 5);
  fillPlan(*b, 17);
  pool.count(*a);
  pool.count(*b);
  const uint64_t both = planStorageBytes(*a) + planStorageBytes(*b);
  EXPECT_EQ(pool.bytes(), both);
  Plan* aRaw = a.get();
  pool.recycle(std::move(a));
  EXPECT_EQ(pool.lent(), 1);
  EXPECT_EQ(pool.bytes(), both) << "an idle plan keeps its storage for the next launch";
  // The next launch reuses the idle plan, emptied, with its storage.
  std::unique_ptr<Plan> c = pool.acquire(2);
  EXPECT_EQ(c.get(), aRaw);
  EXPECT_EQ(c->channels.size(), 2u);
  EXPECT_TRUE(c->channels[0].empty());
  EXPECT_EQ(c->nChannelsUsed, 0);
  EXPECT_TRUE(c->streams.empty());
  pool.recycle(std::move(c));
  pool.recycle(std::move(b));
  EXPECT_EQ(pool.lent(), 0);
  EXPECT_GT(pool.bytes(), 0u);
  pool.releaseIdle();
  EXPECT_EQ(pool.bytes(), 0u);
}

TEST(PlanPool, ReleaseKeepsPlansInFlightCounted) {
  PlanPool pool;
  std::unique_ptr<Plan> idle = pool.acquire(1);
  std::unique_ptr<Plan> busy = pool.acquire(1);
  fillPlan(*idle, 3);
  fillPlan(*busy, 9);
  pool.count(*idle);
  pool.count(*busy);
  pool.recycle(std::move(idle));
  pool.releaseIdle();
  EXPECT_EQ(pool.bytes(), planStorageBytes(*busy));
  pool.recycle(std::move(busy));
  pool.releaseIdle();
  EXPECT_EQ(pool.bytes(), 0u);
}

TEST(PlanStreams, DistinctInCallOrder) {
  Plan p;
  p.reset(1);
  auto s = [](uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); };
  for (uintptr_t v : {7, 3, 7, 0, 3, 9}) p.addStream(s(v));
  ASSERT_EQ(p.streams.size(), 4u);
  EXPECT_EQ(p.streams[0], s(7));
  EXPECT_EQ(p.streams[1], s(3));
  EXPECT_EQ(p.streams[2], s(0));
  EXPECT_EQ(p.streams[3], s(9));
}

// --- A communicator through the seam ---

// Stands in for an asynchronous backend: launch() keeps the plan (the work "runs" until
// complete()), returns at once, and an error can be raised after the launch returned.
class HeldBackend final : public CommBackend {
 public:
  HeldBackend(CommEngine* engine, CommBackend* real) : engine_(engine), real_(real) {}
  const char* name() const override { return "held"; }
  int channelCount(const CommFacts& facts) const override { return real_->channelCount(facts); }
  FifoLayout fifoLayout() const override { return real_->fifoLayout(); }
  ncclResult_t start() override { return ncclSuccess; }
  void attachHealth(std::shared_ptr<const CommHealth>, const uint64_t*, int) override {}
  size_t chunkElems(ProtoId proto, size_t elemSize, size_t rankBytes) const override {
    return real_->chunkElems(proto, elemSize, rankBytes);
  }
  bool launchBlocks() const override { return false; }
  std::unique_ptr<CostModel> costModel(TunerTopo* topo, int nChannels, int cpus) const override {
    return real_->costModel(topo, nChannels, cpus);
  }
  // Core connected the plan's peers on a channel (one channel per launch here).
  ncclResult_t publishConnections(int, const ChannelLinks&) override {
    ++connects;
    return ncclSuccess;
  }
  ncclResult_t launch(std::unique_ptr<Plan> plan) override {
    held.push_back(std::move(plan));
    return ncclSuccess;
  }
  ncclResult_t query() override { return held.empty() ? ncclSuccess : ncclInProgress; }
  ncclResult_t wait() override {
    complete();
    return ncclSuccess;
  }
  ncclResult_t asyncError() override { return raised; }
  ncclResult_t peerFailureOr(const char*, ncclResult_t res) const override { return res; }
  uint64_t objectBytes() const override { return sizeof(*this); }
  uint64_t scratchBytes() const override { return 0; }
  void releaseScratch() override {}
  void releaseConnections(bool) override {}

  void complete() {
    for (std::unique_ptr<Plan>& p : held) engine_->plans.recycle(std::move(p));
    held.clear();
  }

  std::vector<std::unique_ptr<Plan>> held;
  int connects = 0;
  ncclResult_t raised = ncclSuccess;

 private:
  CommEngine* engine_;
  CommBackend* real_;
};

cudaStream_t stream(uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

TEST(BackendSeam, HostCommunicatorUsesTheHostBackend) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  CommBackend& b = *comm->engine->backend;
  EXPECT_STREQ(b.name(), "host");
  EXPECT_TRUE(b.launchBlocks());
  EXPECT_EQ(b.query(), ncclSuccess);
  EXPECT_EQ(b.wait(), ncclSuccess);
  EXPECT_EQ(b.asyncError(), ncclSuccess);
  // One Simple step of the host FIFO carries whole elements, the same for every element size;
  // on one host every item takes whole 128 KiB slots.
  const size_t floats = b.chunkElems(kProtoSimple, 4, 64 << 20);
  EXPECT_EQ(floats, (128u << 10) / 4);
  EXPECT_EQ(b.chunkElems(kProtoSimple, 8, 64 << 20), floats / 2);
  EXPECT_EQ(b.chunkElems(kProtoSimple, 4, 1000), floats);
  EXPECT_TRUE(b.runsLoneColls());
  // The host backend runs each launch to the end on the caller: its plan is back in the pool.
  // A call inside a group gets a plan; a lone call (core/engine/lone_coll.h) takes none.
  std::vector<float> data(1000, 1.5f);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, stream(0x10)),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(comm->engine->plans.lent(), 0);
  const uint64_t planBytes = comm->engine->plans.bytes();
  EXPECT_GT(planBytes, 0u);
  const uint64_t plansLent = comm->engine->plans.lentEver();
  EXPECT_GE(plansLent, 1u);
  for (int i = 1; i < 3; ++i) {
    ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comm, stream(0x10 + i)),
              ncclSuccess);
    EXPECT_EQ(comm->engine->plans.lent(), 0);
  }
  EXPECT_EQ(data[999], 1.5f);
  EXPECT_EQ(comm->engine->plans.bytes(), planBytes);
  EXPECT_EQ(comm->engine->plans.lentEver(), plansLent);  // the lone calls took no plan
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Issue 18 fault 8 raised kMaxChannels to 32 for the CUDA backend; the host backend's channels
// are threads and stay at one by default and at most 16, however many are asked for.

// Slots larger than the one-host step (across hosts by default) are filled only by items whose
// share per rank fills the FIFO; smaller ones step at 128 KiB, larger ones in between take an
// eighth of their share (4 KiB multiples). A FIFO size the user set keeps whole slots.
TEST(BackendSeam, HostStepsFitItemsThatDoNotFillLargeSlots) {
  constexpr size_t kSlot = 512u << 10;
  EXPECT_EQ(hostSimpleStepBytes(kSlot, 64u << 20, true), kSlot);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, 4u << 20, true), kSlot);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, 2u << 20, true), 256u << 10);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, (2u << 20) + 32767, true), 256u << 10);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, (3u << 20) + 1, true), 384u << 10);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, 1u << 20, true), 128u << 10);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, 0, true), 128u << 10);
  EXPECT_EQ(hostSimpleStepBytes(kSlot, 1000, false), kSlot);
  EXPECT_EQ(hostSimpleStepBytes(64u << 10, 64u << 20, true), 64u << 10);  // never over a slot
  EXPECT_EQ(hostSimpleStepBytes(64u << 10, 0, true), 64u << 10);

  // NCCL_BUFFSIZE set: whole slots for every item, as the CUDA backend cuts them.
  test::ScopedEnvVar buff("NCCL_BUFFSIZE", "4194304");
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  CommBackend& b = *comm->engine->backend;
  EXPECT_EQ(b.chunkElems(kProtoSimple, 4, 64 << 20), kSlot / 4);
  EXPECT_EQ(b.chunkElems(kProtoSimple, 4, 0), kSlot / 4);
  EXPECT_EQ(b.chunkElems(kProtoSimple, 8, 1 << 20), kSlot / 8);
  // LL steps are the LL slots', whatever the item.
  EXPECT_EQ(b.chunkElems(kProtoLL, 4, 64 << 20), b.chunkElems(kProtoLL, 4, 0));
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}
TEST(BackendSeam, HostChannelsStayAtSixteenWhateverIsAsked) {
  for (const char* v : {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}) unsetenv(v);
  std::unique_ptr<CommBackend> host;
  ASSERT_EQ(createBackend(Backend::Host, EngineView(), &host), ncclSuccess);
  CommFacts facts;
  facts.maxCTAs = 64;  // ncclConfig_t's default
  EXPECT_EQ(host->channelCount(facts), 1);
  facts.minCTAs = 12;
  EXPECT_EQ(host->channelCount(facts), 12);
  facts.minCTAs = 24;
  EXPECT_EQ(host->channelCount(facts), 16);
  facts.minCTAs = 1;
  setenv("NCCL_MIN_NCHANNELS", "64", 1);
  EXPECT_EQ(host->channelCount(facts), 16);
  setenv("NCCL_MAX_NCHANNELS", "5", 1);
  EXPECT_EQ(host->channelCount(facts), 5);
  for (const char* v : {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}) unsetenv(v);
}

TEST(BackendSeam, TwoLaunchesInFlightEachWithItsOwnPlanAndStreams) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  CommEngine& e = *comm->engine;
  std::unique_ptr<CommBackend> host = std::move(e.backend);
  auto heldOwner = std::make_unique<HeldBackend>(&e, host.get());
  HeldBackend* held = heldOwner.get();
  e.backend = std::move(heldOwner);

  std::vector<float> a(64, 1.0f), b(4099, 2.0f);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, comm, stream(0xa)), ncclSuccess);
  // A group over two streams is one launch, one plan; its streams in call order.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllGather(b.data(), b.data(), b.size(), ncclFloat32, comm, stream(0xb)), ncclSuccess);
  ASSERT_EQ(ncclBroadcast(b.data(), b.data(), b.size(), ncclFloat32, 0, comm, stream(0xc)), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, comm, stream(0xb)), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);

  ASSERT_EQ(held->held.size(), 2u);
  EXPECT_EQ(held->connects, 2);
  EXPECT_EQ(e.plans.lent(), 2);
  const Plan& first = *held->held[0];
  const Plan& second = *held->held[1];
  EXPECT_NE(&first, &second);
  ASSERT_EQ(first.streams.size(), 1u);
  EXPECT_EQ(first.streams[0], stream(0xa));
  ASSERT_EQ(second.streams.size(), 2u);
  EXPECT_EQ(second.streams[0], stream(0xb));
  EXPECT_EQ(second.streams[1], stream(0xc));
  // Each plan holds its own launch's work: one item vs three, with their counts.
  size_t firstItems = 0, secondItems = 0;
  for (const auto& ch : first.channels) firstItems += ch.size();
  for (const auto& ch : second.channels) secondItems += ch.size();
  EXPECT_EQ(firstItems, static_cast<size_t>(first.nChannelsUsed));
  EXPECT_EQ(secondItems, 3u * second.nChannelsUsed);
  EXPECT_EQ(first.channels[0][0].coll.count, a.size());
  EXPECT_EQ(second.channels[0][0].coll.func, kFuncAllGather);
  EXPECT_EQ(second.channels[0][2].coll.count, b.size());
  // Both plans are counted while in flight.
  CommMemoryUsage mem;
  measureCommMemory(comm, &mem);
  EXPECT_EQ(mem.planBytes, planStorageBytes(first) + planStorageBytes(second));
  EXPECT_EQ(e.backend->query(), ncclInProgress);

  // An error raised after the launch returned reaches ncclCommGetAsyncError.
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  held->raised = ncclRemoteError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  held->raised = ncclSuccess;

  held->complete();
  EXPECT_EQ(e.backend->query(), ncclSuccess);
  EXPECT_EQ(e.plans.lent(), 0);
  // The host backend again: the next launch reuses one of the two idle plans.
  const uint64_t pooled = e.plans.bytes();
  e.backend = std::move(host);
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, comm, stream(0xd)), ncclSuccess);
  EXPECT_EQ(e.plans.lent(), 0);
  EXPECT_EQ(e.plans.bytes(), pooled);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Three ranks driven by one thread: a group over the three communicators (each launched on its
// own thread, since the host backend's launches block), with two streams per rank, gives the
// right sums and leaves every plan back in its pool.
TEST(BackendSeam, HostGroupOverThreeCommunicatorsAndTwoStreams) {
  constexpr int kRanks = 3;
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess);
  std::vector<std::vector<int32_t>> x(kRanks, std::vector<int32_t>(1031)), y(kRanks, std::vector<int32_t>(7));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < x[r].size(); ++i) x[r][i] = static_cast<int32_t>(i) * (r + 1);
    for (size_t i = 0; i < y[r].size(); ++i) y[r][i] = r == 1 ? static_cast<int32_t>(100 + i) : -1;
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(ncclAllReduce(x[r].data(), x[r].data(), x[r].size(), ncclInt32, ncclSum, comms[r], stream(1)),
              ncclSuccess);
    ASSERT_EQ(ncclBroadcast(y[r].data(), y[r].data(), y[r].size(), ncclInt32, 1, comms[r], stream(2)), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < x[r].size(); ++i) ASSERT_EQ(x[r][i], static_cast<int32_t>(i) * 6) << r << " " << i;
    for (size_t i = 0; i < y[r].size(); ++i) ASSERT_EQ(y[r][i], static_cast<int32_t>(100 + i)) << r << " " << i;
    EXPECT_EQ(comms[r]->engine->plans.lent(), 0);
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
}

}  // namespace
}  // namespace accl
