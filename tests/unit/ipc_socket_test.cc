// IpcSocket (src/util/ipc_socket.h): memfds passed between threads and between forked processes,
// a wrong token / rank / scope refused, a silent peer timing out instead of hanging.
#include "util/ipc_socket.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "support/rank_launcher.h"

namespace accl {
namespace {

constexpr uint64_t kScope = 0x5eed'0000'1234ull;
constexpr uint64_t kToken = 0x0123'4567'89ab'cdefull;

// A memfd of `bytes` whose bytes are (i * 7 + seed) & 0xff.
int patternedMemfd(size_t bytes, int seed) {
  int fd = memfd_create("ipc-test", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return -1;
  auto* p = static_cast<unsigned char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED) return -1;
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>((i * 7 + seed) & 0xff);
  munmap(p, bytes);
  return fd;
}

// Empty when `fd` holds the pattern of patternedMemfd(bytes, seed), else the first difference.
std::string checkPattern(int fd, size_t bytes, int seed) {
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) return "wrong size";
  auto* p = static_cast<unsigned char*>(mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED) return "mmap failed";
  std::string why;
  for (size_t i = 0; i < bytes && why.empty(); ++i)
    if (p[i] != static_cast<unsigned char>((i * 7 + seed) & 0xff)) why = "byte " + std::to_string(i) + " differs";
  munmap(p, bytes);
  return why;
}

IpcFdHeader header(int fromRank, int tag, uint64_t token, size_t bytes) {
  IpcFdHeader h;
  h.scope = kScope;
  h.token = token;
  h.fromRank = fromRank;
  h.tag = tag;
  h.bytes = bytes;
  return h;
}

TEST(IpcSocket, NamesAreAbstractAndDistinct) {
  IpcSocket a, b;
  ASSERT_EQ(a.open(kScope, 3), ncclSuccess);
  ASSERT_EQ(b.open(kScope, 3), ncclSuccess);  // same scope and rank: the nonce tells them apart
  EXPECT_NE(a.address().nonce, b.address().nonce);
  EXPECT_NE(ipcSocketName(a.address()), ipcSocketName(b.address()));
  EXPECT_EQ(ipcSocketName(a.address()).rfind("accl-ipc-", 0), 0u);
  EXPECT_EQ(a.address().rank, 3);
  EXPECT_EQ(access(("/" + ipcSocketName(a.address())).c_str(), F_OK), -1);  // nothing in the file system
}

TEST(IpcSocket, PassesAMemfdBetweenThreads) {
  IpcSocket receiver;
  ASSERT_EQ(receiver.open(kScope, 0), ncclSuccess);
  const size_t bytes = 4099;  // odd: not a page multiple
  ncclResult_t sent = ncclInternalError;
  std::thread sender([&] {
    IpcSocket unused;  // the sender needs no socket of its own; sendFd makes a transient one
    int fd = patternedMemfd(bytes, 5);
    sent = unused.sendFd(receiver.address(), fd, header(1, 7, kToken, bytes), 10000);
    close(fd);  // the receiver's copy stays valid
  });
  int fd = -1;
  IpcFdHeader got;
  EXPECT_EQ(receiver.recvFd(1, kToken, 7, 20000, &fd, &got), ncclSuccess);
  sender.join();
  EXPECT_EQ(sent, ncclSuccess);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(got.bytes, bytes);
  EXPECT_EQ(checkPattern(fd, bytes, 5), "");
  close(fd);
}

TEST(IpcSocket, PassesMemfdsBetweenForkedProcesses) {
  // Rank 0 listens on one socket per sender, bound before the fork so every child knows the address.
  IpcSocket receivers[3];
  for (int from = 1; from < 3; ++from) ASSERT_EQ(receivers[from].open(kScope, 0), ncclSuccess);
  test::LaunchOptions opts{.mode = test::LaunchMode::kFork, .nranks = 3, .deadline = std::chrono::seconds(60)};
  test::LaunchResult res = test::launchRanks(opts, [&](test::RankContext& ctx) {
    if (ctx.rank == 0) {
      for (int from = 1; from < ctx.nranks; ++from) {
        int fd = -1;
        RANK_CHECK(ctx, receivers[from].recvFd(from, kToken + from, from * 10, 30000, &fd) == ncclSuccess);
        if (fd >= 0) {
          std::string why = checkPattern(fd, 1000 + from, from);
          RANK_CHECK(ctx, why.empty());
          close(fd);
        }
      }
    } else {
      int fd = patternedMemfd(1000 + ctx.rank, ctx.rank);
      RANK_CHECK(ctx, fd >= 0);
      IpcSocket sender;
      RANK_CHECK(ctx, sender.sendFd(receivers[ctx.rank].address(), fd,
                                    header(ctx.rank, ctx.rank * 10, kToken + ctx.rank, 1000 + ctx.rank),
                                    20000) == ncclSuccess);
      close(fd);
    }
  });
  EXPECT_RANKS_OK(res);
}

TEST(IpcSocket, RefusesAWrongTokenRankOrScope) {
  IpcSocket receiver;
  ASSERT_EQ(receiver.open(kScope, 0), ncclSuccess);
  int memfd = patternedMemfd(64, 1);
  ASSERT_GE(memfd, 0);
  struct Case {
    IpcFdHeader h;
    const char* what;
  };
  IpcFdHeader otherScope = header(1, 0, kToken, 64);
  otherScope.scope = kScope + 1;
  IpcFdHeader badMagic = header(1, 0, kToken, 64);
  badMagic.magic = 42;
  const Case cases[] = {{header(1, 0, kToken ^ 1, 64), "token"},
                        {header(2, 0, kToken, 64), "rank"},
                        {header(1, 9, kToken, 64), "tag"},
                        {otherScope, "scope"},
                        {badMagic, "magic"}};
  for (const Case& c : cases) {
    ASSERT_EQ(receiver.sendFd(receiver.address(), memfd, c.h, 5000), ncclSuccess) << c.what;
    int fd = -1;
    EXPECT_EQ(receiver.recvFd(1, kToken, 0, 5000, &fd), ncclSystemError) << c.what;
    EXPECT_EQ(fd, -1) << c.what;
  }
  // The genuine one still goes through afterwards.
  ASSERT_EQ(receiver.sendFd(receiver.address(), memfd, header(1, 0, kToken, 64), 5000), ncclSuccess);
  int fd = -1;
  EXPECT_EQ(receiver.recvFd(1, kToken, 0, 5000, &fd), ncclSuccess);
  EXPECT_EQ(checkPattern(fd, 64, 1), "");
  close(fd);
  close(memfd);
}

TEST(IpcSocket, SilentPeerTimesOut) {
  IpcSocket receiver;
  ASSERT_EQ(receiver.open(kScope, 0), ncclSuccess);
  int fd = 123;
  EXPECT_EQ(receiver.recvFd(1, kToken, 0, 0, &fd), ncclInProgress);  // a poll: nothing yet
  EXPECT_EQ(fd, -1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(receiver.recvFd(1, kToken, 0, 200, &fd), ncclSystemError);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190));
}

TEST(IpcSocket, SendingToNobodyTimesOut) {
  IpcSocket gone;
  ASSERT_EQ(gone.open(kScope, 4), ncclSuccess);
  const IpcAddress addr = gone.address();
  gone.close();  // its name is free again: nobody listens there
  int memfd = patternedMemfd(16, 0);
  ASSERT_GE(memfd, 0);
  IpcSocket sender;
  EXPECT_EQ(sender.sendFd(addr, memfd, header(0, 0, kToken, 16), 100), ncclSystemError);
  EXPECT_EQ(sender.sendFd(addr, -1, header(0, 0, kToken, 16), 100), ncclInvalidArgument);
  close(memfd);
}

}  // namespace
}  // namespace accl
