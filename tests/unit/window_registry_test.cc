// The live-window table (core/comm/window_registry.h): lookups by owner, deregistration, per-comm
// counts and release at teardown. Comms here are fake addresses: the table never dereferences
// them.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/comm/window_registry.h"
#include "util/last_error.h"

namespace accl {
namespace {

ncclComm* fakeComm(uintptr_t n) { return reinterpret_cast<ncclComm*>(n * 64); }

TEST(WindowRegistryTest, LookupDeregisterCountAndRelease) {
  ncclComm* a = fakeComm(1001);
  ncclComm* b = fakeComm(1002);
  char bufA[7], bufB[13];
  ncclWindow_t wa = registerWindow(a, bufA, sizeof(bufA), 0);
  ncclWindow_t wa2 = registerWindow(a, nullptr, 0, 1);
  ncclWindow_t wb = registerWindow(b, bufB, sizeof(bufB), 0);
  EXPECT_EQ(liveWindowCount(a), 2u);
  EXPECT_EQ(liveWindowCount(b), 1u);

  WindowInfo info{};
  ASSERT_EQ(lookupWindow("test", a, wa, &info), ncclSuccess);
  EXPECT_EQ(info.buff, bufA);
  EXPECT_EQ(info.size, sizeof(bufA));
  EXPECT_EQ(info.comm, a);
  ASSERT_EQ(lookupWindow("test", a, wa2, &info), ncclSuccess);
  EXPECT_EQ(info.flags, 1);

  setLastError("");
  EXPECT_EQ(lookupWindow("test", b, wa, &info), ncclInvalidArgument);  // a's window, asked by b
  EXPECT_NE(std::string(lastErrorText()).find("belongs to comm"), std::string::npos) << lastErrorText();
  EXPECT_EQ(lookupWindow("test", a, nullptr, &info), ncclInvalidArgument);
  EXPECT_EQ(deregisterWindow("test", b, wa), ncclInvalidArgument);

  ASSERT_EQ(deregisterWindow("test", b, wb), ncclSuccess);
  EXPECT_EQ(lookupWindow("test", b, wb, &info), ncclInvalidArgument);
  EXPECT_NE(std::string(lastErrorText()).find("not registered"), std::string::npos) << lastErrorText();
  EXPECT_EQ(deregisterWindow("test", b, wb), ncclInvalidArgument);
  EXPECT_EQ(liveWindowCount(b), 0u);

  EXPECT_EQ(releaseWindowsOf(a), 2u);
  EXPECT_EQ(liveWindowCount(a), 0u);
  EXPECT_EQ(lookupWindow("test", a, wa, &info), ncclInvalidArgument);
  EXPECT_EQ(releaseWindowsOf(a), 0u);
}

}  // namespace
}  // namespace accl
