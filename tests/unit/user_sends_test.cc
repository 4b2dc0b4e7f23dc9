// UserSends (backend/host/user_sends.h), the host Prims' record of zero-copy network sends, on a
// FIFO in this process whose head a second thread moves as a proxy would: a step is published as
// a pointer (not the bytes), a write to a user range waits exactly for the sends that read it,
// the end of an operation waits for all of them, and an abandoned end is closed for the proxy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/host/user_sends.h"

namespace accl {
namespace {

class UserSendsTest : public ::testing::Test {
 protected:
  UserSendsTest() : recvMem_(layout().recvBytes() + 64), sendMem_(FifoLayout::sendBytes() + 64) {
    view_ = makeFifoView(align(recvMem_.data()), align(sendMem_.data()), layout());
    end_ = HostConnEnd{&view_, 1, 0, 64};
    wait_.timeoutMs = 20000;  // a broken wait fails the test instead of hanging it
    wait_.spinCount = 64;
    wait_.yieldUs = 50;
  }
  static FifoLayout layout() {
    FifoLayout l;
    l.simpleSlotBytes = 256;
    l.llSlotWords = 16;
    return l;
  }
  static void* align(char* p) { return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + 63) / 64 * 64); }
  uint64_t head() const { return fifoCounter(view_.head).load(); }
  // Publishes head = value after `ms`, as the proxy does once the device sent the steps below it.
  std::thread releaseLater(uint64_t value, int ms) {
    return std::thread([this, value, ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      fifoCounter(view_.head).store(value);
      wakeSleepers(view_.head->sleepers, view_.head->value);
    });
  }

  std::vector<char> recvMem_, sendMem_;
  FifoView view_;
  HostConnEnd end_{};
  WaitPolicy wait_;
  char user_[1024] = {};
};

TEST_F(UserSendsTest, AStepIsPublishedAsAPointerWithItsSize) {
  UserSends sends;
  sends.publish(end_, user_ + 8, 200);
  EXPECT_EQ(view_.step, 1u);
  EXPECT_EQ(fifoCounter(view_.tail).load(), 1u);
  EXPECT_EQ(view_.tail->stepInfo[0], 200u | kFifoStepUserPtr);
  FifoUserSend desc;
  std::memcpy(&desc, view_.simpleSlot(0), sizeof(desc));
  EXPECT_EQ(desc.data, user_ + 8);
  EXPECT_EQ(desc.reg.id, 0u);  // no registered buffer named
  EXPECT_TRUE(sends.any());
}

TEST_F(UserSendsTest, AStepFromARegisteredBufferNamesIt) {
  UserSends sends;
  const UserBufferReg reg{user_, sizeof(user_), 0xacc1000000000010ull};
  sends.publish(end_, user_ + 100, 300, reg);
  FifoUserSend desc;
  std::memcpy(&desc, view_.simpleSlot(0), sizeof(desc));
  EXPECT_EQ(desc.data, user_ + 100);
  EXPECT_EQ(desc.reg.base, static_cast<const void*>(user_));
  EXPECT_EQ(desc.reg.bytes, sizeof(user_));
  EXPECT_EQ(desc.reg.id, reg.id);
}

TEST_F(UserSendsTest, ARegisteredBufferCoversOnlyRangesInsideIt) {
  const UserBufferReg reg{user_ + 100, 200, 7};
  EXPECT_TRUE(reg.covers(user_ + 100, 200));  // the whole buffer
  EXPECT_TRUE(reg.covers(user_ + 299, 1));    // its last byte
  EXPECT_TRUE(reg.covers(user_ + 300, 0));    // empty, at its end
  EXPECT_FALSE(reg.covers(user_ + 299, 2));   // one byte past the end
  EXPECT_FALSE(reg.covers(user_ + 99, 1));    // one byte before it
  EXPECT_FALSE(reg.covers(user_ + 301, 0));
  EXPECT_FALSE((UserBufferReg{user_ + 100, 200, 0}.covers(user_ + 100, 1)));  // id 0: no buffer
}

TEST_F(UserSendsTest, RegistrationNeededWhenAnyEndSendsOnlyFromRegisteredMemory) {
  HostConnEnd ends[2] = {end_, end_};
  EXPECT_FALSE(UserSends::needRegistration(ends, 2));  // Socket: any memory
  ends[1].userSendRegisteredOnly = true;                // IB verbs, plugins
  EXPECT_TRUE(UserSends::needRegistration(ends, 2));
  EXPECT_FALSE(UserSends::needRegistration(ends, 1));
}

TEST_F(UserSendsTest, AllowedOnlyAtOrAboveEveryEndsThreshold) {
  HostConnEnd ends[2] = {end_, end_};
  EXPECT_FALSE(UserSends::allowed(ends, 2, 63));
  EXPECT_TRUE(UserSends::allowed(ends, 2, 64));
  ends[1].userSendMin = 0;  // a FIFO end (shm, p2p): never
  EXPECT_FALSE(UserSends::allowed(ends, 2, 4096));
  EXPECT_FALSE(UserSends::allowed(ends, 0, 4096));
  EXPECT_FALSE(UserSends::inputSentAsIs(DevRedOp{DevRedOpKind::kPreMulSum}));
  EXPECT_TRUE(UserSends::inputSentAsIs(DevRedOp{DevRedOpKind::kSumPostDiv}));
}

TEST_F(UserSendsTest, AWriteWaitsOnlyForTheSendsThatReadItsRange) {
  UserSends sends;
  sends.publish(end_, user_, 100);        // step 0: [0, 100)
  sends.publish(end_, user_ + 200, 100);  // step 1: [200, 300)
  // Disjoint from both: no wait although nothing was sent yet.
  ASSERT_EQ(sends.waitClear(user_ + 100, 100, wait_, "test"), ncclSuccess);
  ASSERT_EQ(sends.waitClear(user_ + 300, 700, wait_, "test"), ncclSuccess);
  EXPECT_EQ(head(), 0u);
  // Overlaps step 1 by one byte: returns only once head passed step 1.
  std::thread proxy = releaseLater(2, 30);
  ASSERT_EQ(sends.waitClear(user_ + 299, 1, wait_, "test"), ncclSuccess);
  EXPECT_GE(head(), 2u);
  proxy.join();
  EXPECT_FALSE(sends.any()) << "sends the head passed are forgotten";
}

TEST_F(UserSendsTest, TheOperationEndWaitsForEverySend) {
  UserSends sends;
  for (int i = 0; i < kFifoSteps; ++i) sends.publish(end_, user_ + 100 * i, 100);
  std::thread proxy = releaseLater(kFifoSteps, 30);
  ASSERT_EQ(sends.waitAll(wait_, "test"), ncclSuccess);
  EXPECT_EQ(head(), uint64_t(kFifoSteps));
  EXPECT_FALSE(sends.any());
  proxy.join();
}

TEST_F(UserSendsTest, AWaitThatFailsReportsIt) {
  UserSends sends;
  sends.publish(end_, user_, 100);
  std::atomic<int> abortFlag{1};
  wait_.abortFlag = &abortFlag;
  EXPECT_NE(sends.waitAll(wait_, "test"), ncclSuccess);
}

TEST_F(UserSendsTest, AbandonClosesTheStagingFifoOnlyWhileASendIsOutstanding) {
  UserSends sends;
  sends.publish(end_, user_, 100);
  fifoCounter(view_.head).store(1);  // sent already
  sends.abandon();
  EXPECT_EQ(view_.tail->closed, 0u);
  sends.publish(end_, user_, 100);  // step 1, not sent
  sends.abandon();
  EXPECT_EQ(view_.tail->closed, 1u) << "the proxy must post no more user-pointer steps of this end";
  EXPECT_FALSE(sends.any());
}

}  // namespace
}  // namespace accl
