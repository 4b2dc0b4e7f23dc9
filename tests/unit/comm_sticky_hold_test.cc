// The holds an API call takes on its communicator without the registry's mutex (a thread's
// "sticky" communicator, core/comm/comm_lifetime.h): a destroy or an abort from another thread
// still waits for them or refuses them, a call on a handle destroyed meanwhile gets the
// "destroyed" error (the thread's pin keeps the object, not the communicator), and the pin moves
// with the thread's next communicator. One-rank communicators: the lone-collective path, no peer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/comm/comm.h"
#include "nccl.h"

namespace {

ncclResult_t sum(ncclComm_t comm, std::vector<float>& v) {
  return ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr);
}

TEST(StickyHold, ACallAfterADestroyOnAnotherThreadSaysDestroyed) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  std::vector<float> v(16, 2.0f);
  std::atomic<int> phase{0};
  std::thread user([&] {
    EXPECT_EQ(sum(comm, v), ncclSuccess);  // locked hold: pins comm for this thread
    EXPECT_EQ(sum(comm, v), ncclSuccess);  // the hold without the mutex
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    EXPECT_EQ(sum(comm, v), ncclInvalidArgument);
    EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "was destroyed"), nullptr) << ncclGetLastError(nullptr);
  });
  while (phase.load() != 1) std::this_thread::yield();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);  // returns at once: the user thread is not inside
  phase = 2;
  user.join();  // the user thread's pin, the last reference, goes with it
  EXPECT_EQ(v[0], 2.0f);
}

TEST(StickyHold, DestroyWhileAnotherThreadKeepsCallingNeverCrashes) {
  for (int round = 0; round < 20; ++round) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
    std::atomic<bool> started{false};
    std::atomic<long> ok{0}, refused{0};
    std::thread user([&] {
      std::vector<float> v(64, 1.0f);
      for (int i = 0; i < 200000; ++i) {
        const ncclResult_t r = sum(comm, v);
        started = true;
        if (r == ncclSuccess) {
          ++ok;
          continue;
        }
        EXPECT_EQ(r, ncclInvalidArgument) << ncclGetLastError(nullptr);
        ++refused;
        break;  // every later call is refused the same way
      }
    });
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(50 * round));
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    user.join();
    EXPECT_GT(ok.load(), 0);
    EXPECT_EQ(refused.load(), 1) << "round " << round << ": the calls after the destroy were not refused";
  }
}

TEST(StickyHold, ThePinMovesToTheThreadsNextCommunicator) {
  ncclComm_t a = nullptr, b = nullptr;
  ASSERT_EQ(ncclCommInitAll(&a, 1, nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommInitAll(&b, 1, nullptr), ncclSuccess);
  std::vector<float> v(8, 1.0f);
  const int refsA = a->life.refs;  // the handle's, before this thread pins it
  ASSERT_EQ(sum(a, v), ncclSuccess);
  EXPECT_EQ(a->life.refs, refsA + 1) << "the thread did not pin its communicator";
  ASSERT_EQ(sum(a, v), ncclSuccess);
  EXPECT_EQ(a->life.refs, refsA + 1);
  EXPECT_EQ(a->life.fastActive.load(), 0) << "a hold without the mutex was not released";
  ASSERT_EQ(sum(b, v), ncclSuccess);
  EXPECT_EQ(a->life.refs, refsA) << "the pin did not leave the previous communicator";
  EXPECT_EQ(ncclCommDestroy(a), ncclSuccess);
  EXPECT_EQ(sum(a, v), ncclInvalidArgument);  // not pinned any more: freed and remembered as dead
  EXPECT_EQ(ncclCommDestroy(b), ncclSuccess);  // pinned by this thread: the object stays until it exits
  EXPECT_EQ(sum(b, v), ncclInvalidArgument);
  EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "was destroyed"), nullptr) << ncclGetLastError(nullptr);
}

}  // namespace
