// Landings (device/common/fifo.h FifoLanding) without a network: the receiver's half
// (backend/host/landings.h) against the proxy's (transports/net/net_landing.h) on one table. The
// proxy takes a landing only for the step and size it was published for, never one the receiver
// took back; a receiver that gives up a claimed step stays until the proxy has stopped the device
// (or the receive completed), so nothing is written into its buffer after it returns.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "backend/host/landings.h"
#include "transports/net/net_conn.h"
#include "transports/net/net_landing.h"

namespace accl {
namespace {

constexpr size_t kMin = 4096;

struct LandingEnds {
  FifoCounter tail{};
  FifoCounter head{};
  FifoView view;
  NetConnResources proxy;
  HostConnEnd end{};
  std::vector<char> out = std::vector<char>(1 << 16);

  explicit LandingEnds(uint64_t step) {
    view.tail = &tail;
    view.head = &head;
    view.step = step;
    proxy.side = ConnSide::kRecv;
    proxy.landings = std::make_unique<FifoLanding[]>(kFifoSteps);
    proxy.landMinBytes = kMin;
    end.fifo = &view;
    end.peerRank = 1;
    end.landings = proxy.landings.get();
    end.landMin = kMin;
  }
  uint64_t state(uint64_t s) const {
    return std::atomic_ref<uint64_t>(proxy.landings[s % kFifoSteps].state).load(std::memory_order_acquire);
  }
  bool claim(uint64_t s, size_t bytes) {
    void* data = nullptr;
    NetMemHandle* mh = nullptr;
    bool ok = false;
    EXPECT_EQ(netClaimLanding(&proxy, s, bytes, &ok, &data, &mh), ncclSuccess);
    EXPECT_TRUE(!ok || data == out.data());
    return ok;
  }
};

// Polls `cond` for up to 5 s.
template <typename F>
bool eventually(F cond) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(NetLanding, ProxyTakesALandingOnlyForItsStepAndSize) {
  LandingEnds e(11);
  EXPECT_FALSE(mayLand(e.end, kMin - 1));
  EXPECT_TRUE(mayLand(e.end, kMin));
  EXPECT_FALSE(e.claim(11, 8192));  // nothing published yet
  publishLanding(e.end, e.out.data(), 8192, UserBufferReg{});
  EXPECT_EQ(e.state(11), 12u);
  EXPECT_FALSE(e.claim(3, 8192));   // the slot's step before (11 - kFifoSteps)
  EXPECT_FALSE(e.claim(19, 8192));  // and after
  EXPECT_FALSE(e.claim(11, 4096));  // another size: into the slot
  ASSERT_TRUE(e.claim(11, 8192));
  EXPECT_EQ(e.proxy.claimedLandings, 1);
  EXPECT_FALSE(e.claim(11, 8192));  // once
  EXPECT_FALSE(netLandingWithdrawn(&e.proxy));
  netLandingDone(&e.proxy, 11, 8192);
  EXPECT_EQ(e.state(11), 0u);
  EXPECT_EQ(e.proxy.claimedLandings, 0);
  EXPECT_EQ(e.proxy.landedSteps, 1u);
  EXPECT_EQ(e.proxy.landedBytes, 8192u);
  // The receiver reads the proxy's mark from the tail's step info.
  EXPECT_FALSE(stepLanded(e.end));
  e.tail.stepInfo[11 % kFifoSteps] = 8192 | kFifoStepLanded;
  EXPECT_TRUE(stepLanded(e.end));
}

TEST(NetLanding, ADeviceThatNeedsRegisteredMemoryTakesOnlyRegisteredLandings) {
  LandingEnds e(4);
  e.proxy.landRegisteredOnly = true;
  publishLanding(e.end, e.out.data(), 8192, UserBufferReg{});  // not in a registered buffer
  EXPECT_FALSE(e.claim(4, 8192));
  UserBufferReg other{e.out.data() + 4096, 8192, 7};  // registered, but not all of the step
  publishLanding(e.end, e.out.data(), 8192, other);
  EXPECT_FALSE(e.claim(4, 8192));
  EXPECT_EQ(e.state(4), 5u);  // still the receiver's: it finds its bytes in the slot
  EXPECT_EQ(e.proxy.claimedLandings, 0);
}

TEST(NetLanding, AWithdrawnLandingIsNeverClaimed) {
  LandingEnds e(5);
  publishLanding(e.end, e.out.data(), 8192, UserBufferReg{});
  withdrawLanding(e.end, "test");  // unclaimed: back at once
  EXPECT_EQ(e.state(5), 0u);
  EXPECT_FALSE(e.claim(5, 8192));
  EXPECT_EQ(e.proxy.claimedLandings, 0);
}

TEST(NetLanding, WithdrawingAClaimedLandingWaitsUntilTheProxyStopsTheDevice) {
  LandingEnds e(9);
  publishLanding(e.end, e.out.data(), 8192, UserBufferReg{});
  ASSERT_TRUE(e.claim(9, 8192));
  std::atomic<bool> returned{false};
  std::thread receiver([&] {
    withdrawLanding(e.end, "test");
    returned = true;
  });
  // The proxy sees the withdrawal on its next sweep, and the receiver stays until it acts.
  EXPECT_TRUE(eventually([&] { return netLandingWithdrawn(&e.proxy); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load());
  netStopLandings(&e.proxy);  // no device receive here to close
  receiver.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(e.state(9), 0u);
  EXPECT_EQ(e.proxy.claimedLandings, 0);
  EXPECT_FALSE(netLandingWithdrawn(&e.proxy));
}

TEST(NetLanding, AReceiveThatCompletesDuringTheWithdrawalEndsIt) {
  LandingEnds e(2);
  publishLanding(e.end, e.out.data(), 65536, UserBufferReg{});
  ASSERT_TRUE(e.claim(2, 65536));
  std::thread receiver([&] { withdrawLanding(e.end, "test"); });
  EXPECT_TRUE(eventually([&] { return netLandingWithdrawn(&e.proxy); }));
  netLandingDone(&e.proxy, 2, 65536);  // the bytes were in before the proxy saw it
  receiver.join();
  EXPECT_EQ(e.state(2), 0u);
  // Complete before the withdrawal: nothing to wait for.
  e.view.step = 3;
  publishLanding(e.end, e.out.data(), 65536, UserBufferReg{});
  ASSERT_TRUE(e.claim(3, 65536));
  netLandingDone(&e.proxy, 3, 65536);
  withdrawLanding(e.end, "test");
  EXPECT_EQ(e.state(3), 0u);
  EXPECT_EQ(e.proxy.landedSteps, 2u);
}

TEST(NetLanding, AClaimTheDeviceDidNotTakeGoesBack) {
  LandingEnds e(7);
  publishLanding(e.end, e.out.data(), 8192, UserBufferReg{});
  ASSERT_TRUE(e.claim(7, 8192));
  netUnclaimLanding(&e.proxy, 7);  // the device took no receive: the receiver's again
  EXPECT_EQ(e.state(7), 8u);
  EXPECT_EQ(e.proxy.claimedLandings, 0);
  ASSERT_TRUE(e.claim(7, 8192));  // the next sweep takes it
  // Withdrawn while the proxy held it without a receive posted: released at once.
  std::thread receiver([&] { withdrawLanding(e.end, "test"); });
  EXPECT_TRUE(eventually([&] { return netLandingWithdrawn(&e.proxy); }));
  netUnclaimLanding(&e.proxy, 7);
  receiver.join();
  EXPECT_EQ(e.state(7), 0u);
  EXPECT_FALSE(e.claim(7, 8192));
}

}  // namespace
}  // namespace accl
