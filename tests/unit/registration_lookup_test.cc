// Lookups a backend makes for zero-copy: which live ncclCommRegister registration / window of a
// communicator covers a byte range (core/comm/buffer_registry.h, core/comm/window_registry.h).
#include <gtest/gtest.h>

#include <cstdint>

#include "core/comm/buffer_registry.h"
#include "core/comm/window_registry.h"

namespace accl {
namespace {

ncclComm* fakeComm(uintptr_t n) { return reinterpret_cast<ncclComm*>(n * 64); }

TEST(RegistrationLookup, BufferCoveringARange) {
  ncclComm* a = fakeComm(7001);
  ncclComm* b = fakeComm(7002);
  alignas(64) static char mem[1000];
  void* h = registerBuffer(a, mem + 100, 500);  // [100, 600)
  RegisteredRange r{};
  EXPECT_TRUE(findRegisteredBuffer(a, mem + 100, 500, &r));
  EXPECT_EQ(r.buff, mem + 100);
  EXPECT_EQ(r.size, 500u);
  EXPECT_EQ(r.handle, h);
  EXPECT_TRUE(findRegisteredBuffer(a, mem + 599, 1, nullptr));
  EXPECT_TRUE(findRegisteredBuffer(a, mem + 300, 0, nullptr));
  EXPECT_FALSE(findRegisteredBuffer(a, mem + 599, 2, nullptr)) << "runs past the end";
  EXPECT_FALSE(findRegisteredBuffer(a, mem + 99, 1, nullptr)) << "starts before";
  EXPECT_FALSE(findRegisteredBuffer(a, mem + 600, 0, nullptr)) << "one past the end";
  EXPECT_FALSE(findRegisteredBuffer(b, mem + 100, 1, nullptr)) << "another communicator's";
  EXPECT_FALSE(findRegisteredBuffer(a, nullptr, 0, nullptr));
  EXPECT_EQ(deregisterBuffer("test", a, h), ncclSuccess);
  EXPECT_FALSE(findRegisteredBuffer(a, mem + 100, 1, nullptr)) << "deregistered";
}

TEST(RegistrationLookup, WindowCoveringARange) {
  ncclComm* a = fakeComm(7003);
  alignas(64) static char mem[4096];
  ncclWindow_t w = registerWindow(a, mem, 4096, NCCL_WIN_COLL_SYMMETRIC);
  WindowInfo info{};
  EXPECT_TRUE(findWindowCovering(a, mem + 4000, 96, &info));
  EXPECT_EQ(info.buff, mem);
  EXPECT_EQ(info.flags, NCCL_WIN_COLL_SYMMETRIC);
  EXPECT_FALSE(findWindowCovering(a, mem + 4000, 97, nullptr));
  EXPECT_FALSE(findWindowCovering(fakeComm(7004), mem, 1, nullptr));
  EXPECT_EQ(releaseWindowsOf(a), 1u);
  EXPECT_FALSE(findWindowCovering(a, mem, 1, nullptr));
  (void)w;
}

}  // namespace
}  // namespace accl
