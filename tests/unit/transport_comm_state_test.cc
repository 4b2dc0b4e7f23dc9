// The transports' per-communicator hooks (transports/transport.h) without a communicator: which
// transports keep a state, and the network's state (a NetContext) made from plain values, asked
// for its device, drained and deleted only through the hooks, as the connection table and the
// tuner use it. Also the FIFO's futex wake (device/common/fifo_signal.h) that teardown relies on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/common/fifo.h"
#include "device/common/fifo_signal.h"
#include "transports/net/net_context.h"
#include "transports/transport.h"
#include "util/last_error.h"

namespace accl {
namespace {

TransportCommInit sampleInit() {
  TransportCommInit init;
  init.rank = 3;
  init.commHash = 0x1234abcdULL;
  init.netName = "Socket";
  init.trafficClass = 5;
  return init;
}

TEST(TransportCommState, OnlyTheNetworkKeepsStatePerCommunicator) {
  for (int t = 0; t < transportCount(); ++t) {
    const Transport* transport = transportAt(t);
    const bool isNet = transport == &kNetTransport;
    EXPECT_EQ(transport->commInit != nullptr, isNet) << transport->name;
    EXPECT_EQ(transport->drain != nullptr, isNet) << transport->name;
    EXPECT_EQ(transport->setNicPicker != nullptr, isNet) << transport->name;
    EXPECT_EQ(transport->nicInfo != nullptr, isNet) << transport->name;
  }
}

TEST(TransportCommState, NetStateKeepsTheCommunicatorsValuesAndReportsLostLinks) {
  TransportCommInit init = sampleInit();
  int lostPeer = -1;
  std::string lostDetail;
  init.linkLost = [&](int peer, const std::string& detail) {
    lostPeer = peer;
    lostDetail = detail;
  };
  std::unique_ptr<TransportCommState> state = kNetTransport.commInit(init);
  auto* ctx = dynamic_cast<NetContext*>(state.get());
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->rank(), 3);
  EXPECT_EQ(ctx->choice().commId, 0x1234abcdULL);
  EXPECT_EQ(ctx->choice().netName, "Socket");
  EXPECT_EQ(ctx->choice().trafficClass, 5);
  ctx->reportFailure(7, "Socket connection from rank 3 to rank 7 failed while sending");
  EXPECT_EQ(lostPeer, 7);
  EXPECT_EQ(lostDetail, "Socket connection from rank 3 to rank 7 failed while sending");
  // No connection ever joined the proxy: the drain has nothing to wait for and leaves it stopped.
  kNetTransport.drain(state.get());
  EXPECT_FALSE(ctx->proxy().running());
  state.reset();  // the destructor stops the (idle) proxy once more
}

TEST(TransportCommState, NicInfoDescribesTheDeviceThePickerChose) {
  std::unique_ptr<TransportCommState> state = kNetTransport.commInit(sampleInit());
  std::vector<TransportNic> offered;
  kNetTransport.setNicPicker(state.get(), [&](const std::vector<TransportNic>& nics) {
    offered = nics;
    return static_cast<int>(nics.size()) - 1;  // the last one
  });
  TransportNic nic;
  if (kNetTransport.nicInfo(state.get(), &nic) != ncclSuccess)
    GTEST_SKIP() << "no usable Socket interface here: " << lastErrorText();
  EXPECT_FALSE(nic.name.empty());
  EXPECT_GT(nic.speedMbps, 0);
  // The picker is asked only when the network lists several devices.
  if (!offered.empty()) {
    EXPECT_EQ(nic.name, offered.back().name);
    EXPECT_EQ(nic.pciPath, offered.back().pciPath);
    EXPECT_EQ(static_cast<NetContext*>(state.get())->dev(), static_cast<int>(offered.size()) - 1);
  }
}

TEST(FifoSignal, WakeSleepersWakesAThreadSleepingOnTheCounter) {
  FifoCounter counter{};
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    std::atomic_ref<uint32_t> sleepers(counter.sleepers);
    const uint32_t seen = std::atomic_ref<const uint32_t>(*counterWord(counter.value)).load();
    sleepers.fetch_add(1);
    while (std::atomic_ref<uint64_t>(counter.value).load() == 0)
      futexWaitWord(counterWord(counter.value), seen, 10000000);
    sleepers.fetch_sub(1);
    woke = true;
  });
  while (std::atomic_ref<uint32_t>(counter.sleepers).load() == 0) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  std::atomic_ref<uint64_t>(counter.value).store(1);
  wakeSleepers(counter.sleepers, counter.value);
  sleeper.join();
  EXPECT_TRUE(woke.load());
  // Woken by the wake, not by the 10 s timeout of its sleep.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace accl
