// Unit tests for core/bootstrap, core/bootstrap_root and core/unique_id: ranks run as threads of this
// process. Every multi-rank test runs under a deadline and fails (never hangs) if a rank does not return.
#include "core/bootstrap/bootstrap.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap/bootstrap_root.h"
#include "core/bootstrap/bootstrap_wire.h"
#include "core/bootstrap/unique_id.h"
#include "support/scoped_env.h"
#include "util/last_error.h"
#include "util/net_interfaces.h"
#include "util/socket_acceptor.h"
#include "util/socket_auth.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr uint64_t kTestIdleMs = 20000;  // roots made by the tests give up after this if nobody comes

// Runs fn(i) for i in [0, n) on n threads. Returns false (after recording a failure) when they do not all
// finish within `limit`; the stragglers are detached and keep only the shared state alive. `fn` must
// capture its data by value (shared_ptr) for that reason.
bool runThreads(int n, std::function<ncclResult_t(int)> fn, std::vector<ncclResult_t>* results,
                std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) {
  std::vector<std::future<ncclResult_t>> futures;
  for (int i = 0; i < n; ++i) {
    std::packaged_task<ncclResult_t()> task([fn, i] { return fn(i); });
    futures.push_back(task.get_future());
    std::thread(std::move(task)).detach();
  }
  auto end = std::chrono::steady_clock::now() + limit;
  results->assign(n, ncclInternalError);
  bool all = true;
  for (int i = 0; i < n; ++i) {
    if (futures[i].wait_until(end) != std::future_status::ready) {
      ADD_FAILURE() << "thread " << i << " of " << n << " did not finish within " << limit.count() << " ms";
      all = false;
      continue;
    }
    (*results)[i] = futures[i].get();
  }
  return all;
}

ncclUniqueId newId() {
  ncclUniqueId id;
  EXPECT_EQ(createUniqueId(&id, kTestIdleMs), ncclSuccess);
  return id;
}

BootstrapOptions options(int rank, int nranks, int64_t timeoutMs = 10000,
                         const std::atomic<int>* abortFlag = nullptr) {
  BootstrapOptions o;
  o.rank = rank;
  o.nranks = nranks;
  o.timeoutMs = timeoutMs;
  o.abortFlag = abortFlag;
  return o;
}

// Exercises every operation with checked values.
ncclResult_t exerciseRank(Bootstrap& b) {
  const int n = b.nranks(), r = b.rank();
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) ADD_FAILURE() << "rank " << r << "/" << n << ": " << what;
    return ok;
  };
  // allGather: small struct.
  struct Info {
    int rank;
    int square;
    uint64_t tagged;
  };
  std::vector<Info> infos(n);
  infos[r] = Info{r, r * r, 0xabc0000000000000ull + r};
  if (ncclResult_t res = b.allGather(infos.data(), sizeof(Info)); res != ncclSuccess) return res;
  for (int i = 0; i < n; ++i)
    if (!check(infos[i].rank == i && infos[i].square == i * i && infos[i].tagged == 0xabc0000000000000ull + i,
               "allGather slice " + std::to_string(i)))
      return ncclInternalError;
  // allGather: odd-sized, larger slices.
  const size_t big = 100003;
  std::vector<unsigned char> blob(big * n);
  for (size_t k = 0; k < big; ++k) blob[r * big + k] = (unsigned char)(k * 31 + r * 7);
  if (ncclResult_t res = b.allGather(blob.data(), big); res != ncclSuccess) return res;
  for (int i = 0; i < n; ++i)
    for (size_t k = 0; k < big; k += 997)
      if (!check(blob[i * big + k] == (unsigned char)(k * 31 + i * 7),
                 "big allGather slice " + std::to_string(i)))
        return ncclInternalError;
  // send/recv: everyone sends to everyone (self included) with two tags; receive in reverse order so
  // messages have to be queued.
  for (int p = 0; p < n; ++p) {
    for (int tag : {5, 6}) {
      std::vector<int> msg(3 + p + tag, r * 1000 + p * 10 + tag);
      if (ncclResult_t res = b.send(p, tag, msg.data(), msg.size() * sizeof(int)); res != ncclSuccess)
        return res;
    }
  }
  for (int p = n - 1; p >= 0; --p) {
    for (int tag : {6, 5}) {
      std::vector<int> msg(3 + r + tag, -1);
      if (ncclResult_t res = b.recv(p, tag, msg.data(), msg.size() * sizeof(int)); res != ncclSuccess)
        return res;
      for (int v : msg)
        if (!check(v == p * 1000 + r * 10 + tag,
                   "message from " + std::to_string(p) + " tag " + std::to_string(tag)))
          return ncclInternalError;
    }
  }
  // Ordering within one (peer, tag): three messages arrive in send order.
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int k = 0; k < 3; ++k) {
    int v = r * 10 + k;
    if (ncclResult_t res = b.send(next, 9, &v, sizeof(v)); res != ncclSuccess) return res;
  }
  for (int k = 0; k < 3; ++k) {
    int v = -1;
    if (ncclResult_t res = b.recv(prev, 9, &v, sizeof(v)); res != ncclSuccess) return res;
    if (!check(v == prev * 10 + k, "ordered message " + std::to_string(k))) return ncclInternalError;
  }
  // Barriers, twice in a row.
  for (int k = 0; k < 2; ++k)
    if (ncclResult_t res = b.barrier(); res != ncclSuccess) return res;
  // Broadcast from the first and the last rank.
  for (int root : {0, n - 1}) {
    std::vector<long> data(17, r == root ? 0 : -1);
    if (r == root)
      for (size_t k = 0; k < data.size(); ++k) data[k] = root * 100 + (long)k;
    if (ncclResult_t res = b.broadcast(root, data.data(), data.size() * sizeof(long)); res != ncclSuccess)
      return res;
    for (size_t k = 0; k < data.size(); ++k)
      if (!check(data[k] == root * 100 + (long)k, "broadcast from " + std::to_string(root)))
        return ncclInternalError;
  }
  return ncclSuccess;
}

void runCommunicator(int nranks, int nIds) {
  auto ids = std::make_shared<std::vector<ncclUniqueId>>();
  for (int i = 0; i < nIds; ++i) ids->push_back(newId());
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      nranks,
      [ids, nranks, nIds](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(ids->data(), nIds, options(r, nranks), &b);
        if (res != ncclSuccess) return res;
        if (b->rank() != r || b->nranks() != nranks) return ncclInternalError;
        if ((int)b->peerAddresses().size() != nranks) return ncclInternalError;
        return exerciseRank(*b);
      },
      &results, std::chrono::milliseconds(60000)));
  for (int r = 0; r < nranks; ++r)
    EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << lastErrorText();
}

class BootstrapSizes : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapSizes, AllOperations) { runCommunicator(GetParam(), 1); }

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapSizes, ::testing::Values(1, 2, 3, 5, 8, 16));

class BootstrapScalable : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(BootstrapScalable, AllOperations) { runCommunicator(GetParam().first, GetParam().second); }

INSTANTIATE_TEST_SUITE_P(RanksAndIds, BootstrapScalable,
                         ::testing::Values(std::make_pair(2, 2), std::make_pair(3, 2), std::make_pair(5, 2),
                                           std::make_pair(8, 2), std::make_pair(7, 3), std::make_pair(4, 4),
                                           std::make_pair(5, 5)),
                         [](const auto& info) {
                           return std::to_string(info.param.first) + "ranks_" +
                                  std::to_string(info.param.second) + "ids";
                         });

// Many ranks (and a prime count with 3 ids): init, allGather, barrier and broadcast only, to keep the
// number of sockets reasonable.
void runManyRanks(int nranks, int nIds) {
  auto ids = std::make_shared<std::vector<ncclUniqueId>>();
  for (int i = 0; i < nIds; ++i) ids->push_back(newId());
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      nranks,
      [ids, nranks, nIds](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(ids->data(), nIds, options(r, nranks, 20000), &b);
        if (res != ncclSuccess) return res;
        std::vector<int> all(nranks, -1);
        all[r] = r * 3 + 1;
        if ((res = b->allGather(all.data(), sizeof(int))) != ncclSuccess) return res;
        for (int i = 0; i < nranks; ++i)
          if (all[i] != i * 3 + 1) return ncclInternalError;
        if ((res = b->barrier()) != ncclSuccess) return res;
        int v = r == nranks / 2 ? 777 : 0;
        if ((res = b->broadcast(nranks / 2, &v, sizeof(v))) != ncclSuccess) return res;
        return v == 777 ? ncclSuccess : ncclInternalError;
      },
      &results, std::chrono::milliseconds(60000)));
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r;
}

TEST(BootstrapTest, SixtyFourRanks) { runManyRanks(64, 1); }

TEST(BootstrapTest, FiftyThreeRanksThreeIds) { runManyRanks(53, 3); }

TEST(RankBlockTest, BlocksPartitionTheRanks) {
  for (int n = 1; n <= 40; ++n) {
    for (int k = 1; k <= n; ++k) {
      int expectFirst = 0;
      for (int i = 0; i < k; ++i) {
        RankBlock b = rankBlock(n, k, i);
        EXPECT_EQ(b.first, expectFirst) << n << "/" << k << "/" << i;
        EXPECT_EQ(b.count, n / k + (i < n % k ? 1 : 0));
        for (int r = b.first; r < b.first + b.count; ++r) EXPECT_EQ(rootOfRank(n, k, r), i) << n << "/" << k;
        expectFirst += b.count;
      }
      EXPECT_EQ(expectFirst, n);
    }
  }
}

TEST(BootstrapTest, BarrierHoldsEveryoneUntilTheLastArrives) {
  const int n = 5;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  auto entered = std::make_shared<std::vector<int64_t>>(n, 0);
  auto left = std::make_shared<std::vector<int64_t>>(n, 0);
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n,
      [=](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(ids->data(), 1, options(r, n), &b);
        if (res != ncclSuccess) return res;
        std::this_thread::sleep_for(std::chrono::milliseconds(40 * r));
        (*entered)[r] = nowNs();
        res = b->barrier();
        (*left)[r] = nowNs();
        return res;
      },
      &results));
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[r], ncclSuccess);
  int64_t lastIn = *std::max_element(entered->begin(), entered->end());
  int64_t firstOut = *std::min_element(left->begin(), left->end());
  EXPECT_GE(firstOut, lastIn);
}

// ---- failures ----

TEST(BootstrapTest, MissingRankFailsEveryoneNamingIt) {
  const int n = 3;
  const int64_t timeoutMs = 1000;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  std::vector<ncclResult_t> results;
  int64_t t0 = nowMs();
  ASSERT_TRUE(runThreads(
      2,
      [=](int r) -> ncclResult_t {  // ranks 0 and 1; rank 2 never comes
        std::unique_ptr<Bootstrap> b;
        return Bootstrap::create(ids->data(), 1, options(r, n, timeoutMs), &b);
      },
      &results, std::chrono::milliseconds(10000)));
  int64_t took = nowMs() - t0;
  EXPECT_EQ(results[0], ncclRemoteError);
  EXPECT_EQ(results[1], ncclRemoteError);
  EXPECT_GE(took, timeoutMs - 50);
  EXPECT_LE(took, 2 * timeoutMs + 500);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("timed out after 1000 ms waiting for 1 of 3 ranks (missing: 2)"), std::string::npos)
      << err;
}

TEST(BootstrapTest, MissingRanksWithTwoIdsFailEveryoneNamingThem) {
  const int n = 6;  // blocks: 0..2 and 3..5; ranks 1 and 4 never come
  const int64_t timeoutMs = 1000;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>();
  ids->push_back(newId());
  ids->push_back(newId());
  const std::vector<int> present = {0, 2, 3, 5};
  std::vector<ncclResult_t> results;
  int64_t t0 = nowMs();
  ASSERT_TRUE(runThreads((int)present.size(),
                         [=](int i) -> ncclResult_t {
                           std::unique_ptr<Bootstrap> b;
                           return Bootstrap::create(ids->data(), 2, options(present[i], n, timeoutMs), &b);
                         },
                         &results, std::chrono::milliseconds(15000)));
  int64_t took = nowMs() - t0;
  for (size_t i = 0; i < present.size(); ++i) EXPECT_EQ(results[i], ncclRemoteError) << "rank " << present[i];
  EXPECT_LE(took, 3 * timeoutMs + 1000);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("missing: 1"), std::string::npos) << err;
  EXPECT_NE(err.find("missing: 4"), std::string::npos) << err;
}

TEST(BootstrapTest, WholeBlockMissingWithTwoIds) {
  const int n = 4;  // ranks 2 and 3 (the whole block of id #1) never come
  const int64_t timeoutMs = 800;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(2);
  ASSERT_EQ(createUniqueId(&(*ids)[0], kTestIdleMs), ncclSuccess);
  ASSERT_EQ(createUniqueId(&(*ids)[1], 2000), ncclSuccess);  // nobody visits this one
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      2,
      [=](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        return Bootstrap::create(ids->data(), 2, options(r, n, timeoutMs), &b);
      },
      &results, std::chrono::milliseconds(15000)));
  EXPECT_EQ(results[0], ncclRemoteError);
  EXPECT_EQ(results[1], ncclRemoteError);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("ranks 2..3"), std::string::npos) << err;
}

TEST(BootstrapTest, RankClaimedTwiceIsInvalidUsage) {
  const int n = 3;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  const std::vector<int> claims = {0, 1, 1};
  std::vector<ncclResult_t> results;
  int64_t t0 = nowMs();
  ASSERT_TRUE(runThreads(
      3,
      [=](int i) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        return Bootstrap::create(ids->data(), 1, options(claims[i], n, 3000), &b);
      },
      &results, std::chrono::milliseconds(15000)));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(results[i], ncclInvalidUsage) << "thread " << i;
  EXPECT_LT(nowMs() - t0, 2500);  // decided as soon as everyone arrived, not by the timeout
  std::string err = lastErrorText();
  EXPECT_NE(err.find("rank 1 was claimed by two processes"), std::string::npos) << err;
}

TEST(BootstrapTest, RankClaimedTwiceWithTwoIdsFailsEveryBlock) {
  // Blocks 0..1 (root 0) and 2..3 (root 1); rank 1 claimed twice, rank 2 never comes, so root 0 is still
  // listening (waiting for root 1) whenever the second claim arrives. The usage error leads the verdict.
  const int n = 4;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>();
  ids->push_back(newId());
  ids->push_back(newId());
  const std::vector<int> claims = {0, 1, 1, 3};
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads((int)claims.size(),
                         [=](int i) -> ncclResult_t {
                           std::unique_ptr<Bootstrap> b;
                           return Bootstrap::create(ids->data(), 2, options(claims[i], n, 1000), &b);
                         },
                         &results, std::chrono::milliseconds(15000)));
  for (size_t i = 0; i < claims.size(); ++i) EXPECT_EQ(results[i], ncclInvalidUsage) << "thread " << i;
  std::string err = lastErrorText();
  EXPECT_EQ(err.find("ncclCommInitRank: rank 1 was claimed by two processes"), 0u) << err;
  EXPECT_NE(err.find("missing: 2"), std::string::npos) << err;
}

TEST(BootstrapTest, IdsInDifferentOrderIsInvalidUsage) {
  // Ranks 0..2 pass [A, B], rank 3 passes [B, A]. Blocks: {0, 1} on id #0, {2, 3} on id #1, so root A sees
  // ranks 0 and 1 as id #0 and rank 3 as id #1, and stays up (block {2, 3} can never complete) until it
  // has seen both claims.
  const int n = 4;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>();
  ids->push_back(newId());
  ids->push_back(newId());
  auto texts = std::make_shared<std::vector<std::string>>(n);
  std::vector<ncclResult_t> results;
  int64_t t0 = nowMs();
  ASSERT_TRUE(runThreads(
      n,
      [=](int r) -> ncclResult_t {
        std::vector<ncclUniqueId> mine = *ids;
        if (r == 3) std::swap(mine[0], mine[1]);
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(mine.data(), 2, options(r, n, 600), &b);
        (*texts)[r] = lastErrorText();
        return res;
      },
      &results, std::chrono::milliseconds(15000)));
  for (int r : {0, 1, 3}) EXPECT_EQ(results[r], ncclInvalidUsage) << "rank " << r << ": " << (*texts)[r];
  EXPECT_NE(results[2], ncclSuccess);  // InvalidUsage, or RemoteError when its root cannot reach a root 0
  EXPECT_LT(nowMs() - t0, 3 * 600 + 1000);
  bool named = false;
  for (int r : {0, 1, 3}) named = named || (*texts)[r].find("same order") != std::string::npos;
  EXPECT_TRUE(named) << (*texts)[0];
}

TEST(BootstrapTest, NranksMismatchIsInvalidUsageNamingBothValues) {
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      2,
      [=](int i) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        return Bootstrap::create(ids->data(), 1, i == 0 ? options(0, 3, 1500) : options(1, 2, 1500), &b);
      },
      &results, std::chrono::milliseconds(15000)));
  EXPECT_EQ(results[0], ncclInvalidUsage);
  EXPECT_EQ(results[1], ncclInvalidUsage);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("nranks mismatch"), std::string::npos) << err;
  EXPECT_NE(err.find("nranks=3"), std::string::npos) << err;
  EXPECT_NE(err.find("nranks=2"), std::string::npos) << err;
}

TEST(BootstrapTest, RootSurvivesJunkBeforeTheRanks) {
  ncclUniqueId id = newId();
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(id, &info), ncclSuccess);
  auto raw = [&](const void* bytes, size_t len) {
    int fd = ::socket(info.root.family(), SOCK_STREAM, 0);
    EXPECT_EQ(::connect(fd, &info.root.sa, info.root.length()), 0);
    if (len) {
      EXPECT_EQ(::send(fd, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
    }
    return fd;
  };
  std::mt19937_64 rng(7);
  std::vector<unsigned char> junk(4096);
  for (auto& c : junk) c = (unsigned char)rng();
  std::vector<int> fds;
  fds.push_back(raw(junk.data(), junk.size()));
  uint64_t wrong[2] = {info.magic ^ 1, 1};
  fds.push_back(raw(wrong, 12));
  fds.push_back(raw(nullptr, 0));  // silent, stays open through the init
  // Right magic and type, then garbage instead of a join request.
  unsigned char hs[12 + 64];
  std::memcpy(hs, &info.magic, 8);
  int32_t type = 1;
  std::memcpy(hs + 8, &type, 4);
  for (int i = 12; i < (int)sizeof(hs); ++i) hs[i] = (unsigned char)rng();
  fds.push_back(raw(hs, sizeof(hs)));
  // Right magic, a plausible join header, then hang up.
  WireHeader wh{kJoinRequestKind, kWireVersion};
  std::memcpy(hs + 12, &wh, sizeof(wh));
  int cut = raw(hs, 12 + sizeof(wh));
  ::close(cut);

  setLastError("sentinel");
  const int n = 3;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, id);
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n,
      [=](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(ids->data(), 1, options(r, n, 8000), &b);
        if (res != ncclSuccess) return res;
        return exerciseRank(*b);
      },
      &results));
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r;
  EXPECT_STREQ(lastErrorText(), "sentinel");  // the strangers did not become anybody's error
  for (int fd : fds) ::close(fd);
}

TEST(BootstrapTest, PeerListenerSurvivesJunkAfterInit) {
  const int n = 3;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  auto boots = std::make_shared<std::vector<std::unique_ptr<Bootstrap>>>(n);
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n, [=](int r) { return Bootstrap::create(ids->data(), 1, options(r, n, 8000), &(*boots)[r]); },
      &results));
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[r], ncclSuccess);
  // Junk at rank 1's peer listener.
  SocketAddress target = (*boots)[0]->peerAddresses()[1];
  int fd = ::socket(target.family(), SOCK_STREAM, 0);
  ASSERT_EQ(::connect(fd, &target.sa, target.length()), 0);
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(fd, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
  ASSERT_TRUE(runThreads(
      n, [=](int r) { return exerciseRank(*(*boots)[r]); }, &results));
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r;
  ::close(fd);
}

TEST(BootstrapTest, GarbageIdsAreInvalidArgument) {
  ncclUniqueId zeros;
  std::memset(&zeros, 0, sizeof(zeros));
  ncclUniqueId random;
  std::mt19937 rng(1234);
  for (char& c : random.internal) c = (char)rng();
  UniqueIdInfo good;
  good.magic = 0x55;
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:0", &good.root), ncclSuccess);
  ncclUniqueId portZero;
  encodeUniqueId(good, &portZero);
  good.root.setPort(1234);
  ncclUniqueId trailing;
  encodeUniqueId(good, &trailing);
  trailing.internal[100] = 1;
  ncclUniqueId badFamily;
  encodeUniqueId(good, &badFamily);
  badFamily.internal[8] = 77;
  badFamily.internal[9] = 0;
  for (const ncclUniqueId* id : {&zeros, &random, &portZero, &trailing, &badFamily}) {
    UniqueIdInfo info;
    EXPECT_EQ(parseUniqueId(*id, &info), ncclInvalidArgument);
    std::unique_ptr<Bootstrap> b;
    int64_t t0 = nowMs();
    EXPECT_EQ(Bootstrap::create(id, 1, options(0, 2, 5000), &b), ncclInvalidArgument);
    EXPECT_LT(nowMs() - t0, 1000);
    EXPECT_EQ(b, nullptr);
    EXPECT_NE(std::string(lastErrorText()).find("invalid ncclUniqueId"), std::string::npos)
        << lastErrorText();
  }
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(trailing, &info), ncclInvalidArgument);
  trailing.internal[100] = 0;
  ASSERT_EQ(parseUniqueId(trailing, &info), ncclSuccess);
  EXPECT_EQ(info.magic, 0x55u);
  EXPECT_EQ(info.root.toString(), "127.0.0.1:1234");
}

TEST(BootstrapTest, InvalidArguments) {
  auto unvisited = [] {
    ncclUniqueId id;
    EXPECT_EQ(createUniqueId(&id, 500), ncclSuccess);
    return id;
  };
  ncclUniqueId id = unvisited();
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::create(&id, 1, options(2, 2), &b), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(&id, 1, options(-1, 2), &b), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(&id, 1, options(0, 0), &b), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(nullptr, 1, options(0, 2), &b), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(&id, 0, options(0, 2), &b), ncclInvalidArgument);
  ncclUniqueId three[3] = {id, unvisited(), unvisited()};
  EXPECT_EQ(Bootstrap::create(three, 3, options(0, 2), &b), ncclInvalidArgument);  // more ids than ranks
  ncclUniqueId same[2] = {id, id};
  EXPECT_EQ(Bootstrap::create(same, 2, options(0, 2), &b), ncclInvalidArgument);
  EXPECT_EQ(Bootstrap::create(&id, 1, options(0, 2), nullptr), ncclInvalidArgument);
}

TEST(BootstrapTest, SingleRankNeedsNoPeers) {
  ncclUniqueId id = newId();
  std::unique_ptr<Bootstrap> b;
  ASSERT_EQ(Bootstrap::create(&id, 1, options(0, 1), &b), ncclSuccess);
  ASSERT_EQ(exerciseRank(*b), ncclSuccess);
  int v = 3;
  EXPECT_EQ(b->send(1, 0, &v, sizeof(v)), ncclInvalidArgument);
  EXPECT_EQ(b->recv(-1, 0, &v, sizeof(v)), ncclInvalidArgument);
  EXPECT_EQ(b->broadcast(1, &v, sizeof(v)), ncclInvalidArgument);
}

TEST(BootstrapTest, RecvTimesOutNamingPeerAndTag) {
  const int n = 2;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  auto boots = std::make_shared<std::vector<std::unique_ptr<Bootstrap>>>(n);
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n, [=](int r) { return Bootstrap::create(ids->data(), 1, options(r, n, 500), &(*boots)[r]); },
      &results));
  ASSERT_EQ(results[0], ncclSuccess);
  ASSERT_EQ(results[1], ncclSuccess);
  int v = 0;
  int64_t t0 = nowMs();
  EXPECT_EQ((*boots)[0]->recv(1, 7, &v, sizeof(v)), ncclRemoteError);
  int64_t took = nowMs() - t0;
  EXPECT_GE(took, 450);
  EXPECT_LT(took, 2000);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("rank 0 timed out after 500 ms waiting for a message from rank 1 with tag 7"),
            std::string::npos)
      << err;
  // A size mismatch is reported, and the connection stays usable.
  int64_t big = 5;
  ASSERT_EQ((*boots)[1]->send(0, 8, &big, sizeof(big)), ncclSuccess);
  EXPECT_EQ((*boots)[0]->recv(1, 8, &v, sizeof(v)), ncclInternalError);
  EXPECT_NE(std::string(lastErrorText()).find("has 8 bytes but rank 0 expected 4"), std::string::npos)
      << lastErrorText();
  ASSERT_EQ((*boots)[1]->send(0, 8, &v, sizeof(v)), ncclSuccess);
  EXPECT_EQ((*boots)[0]->recv(1, 8, &v, sizeof(v)), ncclSuccess);
}

TEST(BootstrapTest, PeerThatClosesIsRemoteErrorBeforeTheTimeout) {
  const int n = 2;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  auto boots = std::make_shared<std::vector<std::unique_ptr<Bootstrap>>>(n);
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n, [=](int r) { return Bootstrap::create(ids->data(), 1, options(r, n, 10000), &(*boots)[r]); },
      &results));
  ASSERT_EQ(results[0], ncclSuccess);
  ASSERT_EQ(results[1], ncclSuccess);
  int v = 11;
  ASSERT_EQ((*boots)[1]->send(0, 1, &v, sizeof(v)), ncclSuccess);
  (*boots)[1].reset();
  v = 0;
  ASSERT_EQ((*boots)[0]->recv(1, 1, &v, sizeof(v)), ncclSuccess);
  EXPECT_EQ(v, 11);
  int64_t t0 = nowMs();
  EXPECT_EQ((*boots)[0]->recv(1, 2, &v, sizeof(v)), ncclRemoteError);
  EXPECT_LT(nowMs() - t0, 3000);
  EXPECT_NE(std::string(lastErrorText()).find("rank 1 closed its connection"), std::string::npos)
      << lastErrorText();
  // Asking again fails at once, without waiting out the timeout.
  t0 = nowMs();
  EXPECT_EQ((*boots)[0]->recv(1, 3, &v, sizeof(v)), ncclRemoteError);
  EXPECT_LT(nowMs() - t0, 500);
  EXPECT_NE(std::string(lastErrorText())
                .find("rank 1 closed its connection before rank 0 received a message from "
                      "rank 1 with tag 3"),
            std::string::npos)
      << lastErrorText();
  // The ring neighbour is gone too: allGather fails rather than hangs.
  t0 = nowMs();
  int slice[2] = {0, 0};
  EXPECT_NE((*boots)[0]->allGather(slice, sizeof(int)), ncclSuccess);
  EXPECT_LT(nowMs() - t0, 3000);
}

TEST(BootstrapTest, AbortFlagEndsTheJoinAndTheOthersHearOfIt) {
  // Ranks 0 and 1 of 3 join; rank 2 never comes. Rank 0 is aborted: it returns at once, and the root,
  // seeing it hang up, fails rank 1 long before the 5 s timeout, naming rank 0.
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  auto abortFlag = std::make_shared<std::atomic<int>>(0);
  std::vector<ncclResult_t> results;
  int64_t t0 = nowMs();
  ASSERT_TRUE(runThreads(
      3,
      [=](int i) -> ncclResult_t {
        if (i == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          abortFlag->store(1);
          return ncclSuccess;
        }
        std::unique_ptr<Bootstrap> b;
        return Bootstrap::create(ids->data(), 1, options(i, 3, 5000, i == 0 ? abortFlag.get() : nullptr), &b);
      },
      &results, std::chrono::milliseconds(15000)));
  EXPECT_EQ(results[0], ncclInternalError);
  EXPECT_EQ(results[1], ncclRemoteError);
  EXPECT_LT(nowMs() - t0, 3000);
  std::string err = lastErrorText();
  EXPECT_NE(err.find("rank 0 ("), std::string::npos) << err;
  EXPECT_NE(err.find("hung up on the bootstrap root"), std::string::npos) << err;
}

int countOpenFds() {
  int count = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++count;
  closedir(d);
  return count;
}

bool waitForRootsToExit(int upTo, int64_t ms) {
  int64_t end = nowMs() + ms;
  while (activeBootstrapRoots() > upTo && nowMs() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return activeBootstrapRoots() <= upTo;
}

TEST(BootstrapTest, RootsExitAndNothingLeaks) {
  // Roots of earlier tests may still be waiting out their timeouts; let them finish first.
  ASSERT_TRUE(waitForRootsToExit(0, 30000));
  int rootsBefore = activeBootstrapRoots();
  // A root nobody visits gives up after its idle timeout.
  ncclUniqueId idle;
  ASSERT_EQ(createUniqueId(&idle, 200), ncclSuccess);
  EXPECT_EQ(activeBootstrapRoots(), rootsBefore + 1);
  EXPECT_TRUE(waitForRootsToExit(rootsBefore, 3000));

  int fdsBefore = countOpenFds();
  for (int round = 0; round < 3; ++round) {
    const int n = 4;
    auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
    std::vector<ncclResult_t> results;
    ASSERT_TRUE(runThreads(
        n,
        [=](int r) -> ncclResult_t {
          std::unique_ptr<Bootstrap> b;
          ncclResult_t res = Bootstrap::create(ids->data(), 1, options(r, n), &b);
          return res != ncclSuccess ? res : exerciseRank(*b);
        },
        &results));
    for (int r = 0; r < n; ++r) ASSERT_EQ(results[r], ncclSuccess);
  }
  EXPECT_TRUE(waitForRootsToExit(rootsBefore, 5000));
  EXPECT_EQ(countOpenFds(), fdsBefore);
}

TEST(BootstrapTest, CommIdHostsTheRootOnRankZero) {
  // A free port on loopback.
  Socket probe;
  SocketAddress lo;
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:0", &lo), ncclSuccess);
  ASSERT_EQ(Socket::listen(lo, &probe), ncclSuccess);
  std::string addr = "127.0.0.1:" + std::to_string(probe.localAddress().port());
  probe.close();
  test::ScopedEnvVar commId("NCCL_COMM_ID", addr.c_str());
  int rootsBefore = activeBootstrapRoots();
  for (int round = 0; round < 2; ++round) {  // the second comm reuses the same port
    auto ids = std::make_shared<std::vector<ncclUniqueId>>(1);
    ASSERT_EQ(createUniqueId(&(*ids)[0]), ncclSuccess);
    EXPECT_EQ(activeBootstrapRoots(), rootsBefore);  // no root until rank 0 joins
    UniqueIdInfo info;
    ASSERT_EQ(parseUniqueId((*ids)[0], &info), ncclSuccess);
    EXPECT_EQ(info.magic, kCommIdMagic);
    EXPECT_EQ(info.root.toString(), addr);
    const int n = 3;
    std::vector<ncclResult_t> results;
    ASSERT_TRUE(runThreads(
        n,
        [=](int r) -> ncclResult_t {
          std::unique_ptr<Bootstrap> b;
          ncclResult_t res = Bootstrap::create(ids->data(), 1, options(n - 1 - r, n), &b);
          return res != ncclSuccess ? res : exerciseRank(*b);
        },
        &results));
    for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << lastErrorText();
    EXPECT_TRUE(waitForRootsToExit(rootsBefore, 5000));
  }
}

TEST(BootstrapTest, BadCommIdIsInvalidArgument) {
  test::ScopedEnvVar commId("NCCL_COMM_ID", "not-an-address");
  ncclUniqueId id;
  EXPECT_EQ(createUniqueId(&id), ncclInvalidArgument);
  EXPECT_NE(std::string(lastErrorText()).find("NCCL_COMM_ID"), std::string::npos) << lastErrorText();
}

TEST(BootstrapTest, NoMatchingInterfaceIsInvalidUsage) {
  test::ScopedEnvVar ifname("NCCL_SOCKET_IFNAME", "=no_such_interface0");
  ncclUniqueId id;
  EXPECT_EQ(createUniqueId(&id), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("no_such_interface0"), std::string::npos) << lastErrorText();
}

TEST(BootstrapTest, WorksOverIpv6WhenAvailable) {
  std::vector<NetInterface> all;
  ASSERT_EQ(listInterfaces(&all), ncclSuccess);
  bool haveV6 = false;
  for (const NetInterface& i : all) haveV6 = haveV6 || i.addr.family() == AF_INET6;
  if (!haveV6) GTEST_SKIP() << "no IPv6 interface";
  test::ScopedEnvVar family("NCCL_SOCKET_FAMILY", "AF_INET6");
  test::ScopedEnvVar ifname("NCCL_SOCKET_IFNAME", "");
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, newId());
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId((*ids)[0], &info), ncclSuccess);
  EXPECT_EQ(info.root.family(), AF_INET6);
  const int n = 3;
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n,
      [=](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(ids->data(), 1, options(r, n), &b);
        return res != ncclSuccess ? res : exerciseRank(*b);
      },
      &results));
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << lastErrorText();
}

// ---- Issue 9: a hardened bootstrap ------------------------------------------------------------------

std::string hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) s += std::string{digits[b >> 4], digits[b & 15]};
  return s;
}

TEST(BootstrapSecurityTest, Sha256AndHmacKnownAnswers) {
  EXPECT_EQ(hex(sha256("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  // 56 bytes: two blocks
  EXPECT_EQ(hex(sha256(two, strlen(two))), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // RFC 4231 test case 2.
  const char* msg = "what do ya want for nothing?";
  EXPECT_EQ(hex(hmacSha256(reinterpret_cast<const uint8_t*>("Jefe"), 4, msg, strlen(msg))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(BootstrapSecurityTest, IdsCarryARandomSecret) {
  UniqueIdInfo a, b;
  ASSERT_EQ(parseUniqueId(newId(), &a), ncclSuccess);
  ASSERT_EQ(parseUniqueId(newId(), &b), ncclSuccess);
  std::array<uint8_t, kSecretBytes> zero{};
  EXPECT_NE(a.secret, zero);
  EXPECT_NE(a.secret, b.secret);
  EXPECT_NE(a.magic, b.magic);
  // The grow field (bytes 36..39) and the secret (40..71) round-trip side by side.
  a.growFromRanks = 12;
  ncclUniqueId id;
  encodeUniqueId(a, &id);
  UniqueIdInfo back;
  ASSERT_EQ(parseUniqueId(id, &back), ncclSuccess);
  EXPECT_EQ(back.growFromRanks, 12u);
  EXPECT_EQ(back.secret, a.secret);
  id.internal[72] = 1;  // past the secret: still must be zero
  EXPECT_EQ(parseUniqueId(id, &back), ncclInvalidArgument);
}

TEST(BootstrapSecurityTest, CommIdSecretComesFromTheSetting) {
  test::ScopedEnvVar commId("NCCL_COMM_ID", "127.0.0.1:1");
  UniqueIdInfo open, s1, s2;
  ncclUniqueId id;
  {
    test::ScopedEnvVar secret("ACCL_BOOTSTRAP_SECRET", "");
    ASSERT_EQ(createUniqueId(&id), ncclSuccess);
    ASSERT_EQ(parseUniqueId(id, &open), ncclSuccess);
  }
  {
    test::ScopedEnvVar secret("ACCL_BOOTSTRAP_SECRET", "correct horse");
    ASSERT_EQ(createUniqueId(&id), ncclSuccess);
    ASSERT_EQ(parseUniqueId(id, &s1), ncclSuccess);
  }
  {
    test::ScopedEnvVar secret("ACCL_BOOTSTRAP_SECRET", "correct horse!");
    ASSERT_EQ(createUniqueId(&id), ncclSuccess);
    ASSERT_EQ(parseUniqueId(id, &s2), ncclSuccess);
  }
  EXPECT_EQ(open.secret, (std::array<uint8_t, kSecretBytes>{}));  // no setting: as open as NCCL
  EXPECT_NE(s1.secret, open.secret);
  EXPECT_NE(s1.secret, s2.secret);
  EXPECT_EQ(s1.magic, kCommIdMagic);
}

// A genuine 3-rank bootstrap on `id` (after whatever the test did to its root).
void expectGenuineJobCompletes(const ncclUniqueId& id, int64_t* elapsedMs = nullptr) {
  const int n = 3;
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(1, id);
  std::vector<ncclResult_t> results;
  int64_t start = nowMs();
  ASSERT_TRUE(runThreads(
      n,
      [=](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        ncclResult_t res = Bootstrap::create(ids->data(), 1, options(r, n, 8000), &b);
        return res != ncclSuccess ? res : exerciseRank(*b);
      },
      &results));
  if (elapsedMs) *elapsedMs = nowMs() - start;
  for (int r = 0; r < n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << lastErrorText();
}

TEST(BootstrapSecurityTest, CommIdJobWithASharedSecretRefusesOtherSecrets) {
  Socket probe;
  SocketAddress lo;
  ASSERT_EQ(SocketAddress::parse("127.0.0.1:0", &lo), ncclSuccess);
  ASSERT_EQ(Socket::listen(lo, &probe), ncclSuccess);
  std::string addr = "127.0.0.1:" + std::to_string(probe.localAddress().port());
  probe.close();
  test::ScopedEnvVar commId("NCCL_COMM_ID", addr.c_str());
  auto ids = std::make_shared<std::vector<ncclUniqueId>>(2);
  {
    test::ScopedEnvVar secret("ACCL_BOOTSTRAP_SECRET", "job secret");
    ASSERT_EQ(createUniqueId(&(*ids)[0]), ncclSuccess);
  }
  {
    test::ScopedEnvVar secret("ACCL_BOOTSTRAP_SECRET", "guess");
    ASSERT_EQ(createUniqueId(&(*ids)[1]), ncclSuccess);
  }
  // Ranks 0..2 share the secret; a fourth process with another secret claims rank 1 first.
  const int n = 3;
  std::vector<ncclResult_t> results;
  ASSERT_TRUE(runThreads(
      n + 1,
      [=](int r) -> ncclResult_t {
        std::unique_ptr<Bootstrap> b;
        if (r == n) {
          ncclResult_t res = Bootstrap::create(&(*ids)[1], 1, options(1, n, 3000), &b);
          return res == ncclSuccess ? ncclInternalError : ncclSuccess;  // the forger must fail
        }
        ncclResult_t res = Bootstrap::create(&(*ids)[0], 1, options(r, n, 8000), &b);
        return res != ncclSuccess ? res : exerciseRank(*b);
      },
      &results));
  for (int r = 0; r <= n; ++r) EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << lastErrorText();
}

TEST(BootstrapSecurityTest, WrongSecretIsRefusedByTheRoot) {
  ncclUniqueId id = newId();
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(id, &info), ncclSuccess);
  SocketKey wrong = info.key();
  wrong.secret[5] ^= 1;
  Socket conn;
  EXPECT_EQ(Socket::connect(info.root, wrong, SocketType::kBootstrap, SocketWait::in(3000, nullptr, "x", true),
                            &conn),
            ncclRemoteError);
  EXPECT_NE(std::string(lastSocketErrorText()).find("closed the connection after our proof"), std::string::npos)
      << lastSocketErrorText();
  expectGenuineJobCompletes(id);
}

// Reads the root's answer on an authenticated connection.
JoinReply readReply(Socket& conn) {
  JoinReply raw{}, reply{};
  EXPECT_EQ(conn.recvAll(&raw, sizeof(raw), SocketWait::in(3000, nullptr, "reply")), ncclSuccess);
  std::string why;
  EXPECT_TRUE(decodeJoinReply(&raw, sizeof(raw), &reply, &why)) << why;
  return reply;
}

JoinRequest validJoin(const UniqueIdInfo& info, int rank, int nranks) {
  JoinRequest req;
  std::memset(static_cast<void*>(&req), 0, sizeof(req));
  req.header = wireHeader(kJoinRequestKind, sizeof(req));
  req.rank = rank;
  req.nranks = nranks;
  req.nroots = 1;
  req.rootIndex = 0;
  req.timeoutMs = 8000;
  req.listenAddr = info.root;
  req.root0Addr = info.root;
  req.root0Magic = info.magic;
  return req;
}

// Someone holding the secret (a broken or hostile insider) sends out-of-bounds messages: each is
// refused with an explanation, and the root goes on serving the genuine ranks.
TEST(BootstrapSecurityTest, MalformedJoinsWithTheRightSecretLeaveTheRootServing) {
  ncclUniqueId id = newId();
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(id, &info), ncclSuccess);
  auto dial = [&](Socket* s) {
    return Socket::connect(info.root, info.key(), SocketType::kBootstrap, SocketWait::in(3000, nullptr, "root"), s);
  };
  {  // nranks = INT32_MAX
    Socket s;
    ASSERT_EQ(dial(&s), ncclSuccess);
    JoinRequest req = validJoin(info, 0, 3);
    req.nranks = INT32_MAX;
    ASSERT_EQ(s.sendAll(&req, sizeof(req), SocketWait::in(3000, nullptr, "x")), ncclSuccess);
    JoinReply reply = readReply(s);
    EXPECT_EQ(reply.status, ncclInvalidUsage);
    EXPECT_NE(std::string(reply.message).find("nranks 2147483647"), std::string::npos) << reply.message;
  }
  {  // an oversized length field
    Socket s;
    ASSERT_EQ(dial(&s), ncclSuccess);
    WireHeader h = wireHeader(kJoinRequestKind, 0xffffffffu);
    ASSERT_EQ(s.sendAll(&h, sizeof(h), SocketWait::in(3000, nullptr, "x")), ncclSuccess);
    JoinReply reply = readReply(s);
    EXPECT_EQ(reply.status, ncclInvalidUsage);
    EXPECT_NE(std::string(reply.message).find("length field 4294967295"), std::string::npos) << reply.message;
  }
  {  // a rank outside nranks, and junk after a valid handshake
    Socket s;
    ASSERT_EQ(dial(&s), ncclSuccess);
    JoinRequest req = validJoin(info, 7, 3);
    ASSERT_EQ(s.sendAll(&req, sizeof(req), SocketWait::in(3000, nullptr, "x")), ncclSuccess);
    EXPECT_EQ(readReply(s).status, ncclInvalidUsage);
    Socket junk;
    ASSERT_EQ(dial(&junk), ncclSuccess);
    std::vector<char> bytes(4096, '\x7f');
    ASSERT_EQ(junk.sendAll(bytes.data(), bytes.size(), SocketWait::in(3000, nullptr, "x")), ncclSuccess);
  }
  expectGenuineJobCompletes(id);
}

TEST(BootstrapSecurityTest, DecodersCheckEveryBound) {
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(newId(), &info), ncclSuccess);
  JoinRequest req = validJoin(info, 2, 5), out;
  std::string why;
  EXPECT_TRUE(decodeJoinRequest(&req, sizeof(req), &out, &why)) << why;
  EXPECT_FALSE(decodeJoinRequest(&req, sizeof(req) - 1, &out, &why));
  EXPECT_FALSE(decodeJoinRequest(&req, 3, &out, &why));
  auto expectBad = [&](JoinRequest r, const char* needle) {
    std::string w;
    EXPECT_FALSE(decodeJoinRequest(&r, sizeof(r), &out, &w)) << needle;
    EXPECT_NE(w.find(needle), std::string::npos) << w;
  };
  JoinRequest r = req;
  r.nranks = INT32_MAX;
  expectBad(r, "nranks 2147483647");
  r = req;
  r.nranks = kMaxRanks + 1;
  expectBad(r, "nranks");
  r = req;
  r.rank = -1;
  expectBad(r, "rank -1");
  r = req;
  r.nroots = 6;
  expectBad(r, "6 ids");
  r = req;
  r.rootIndex = 1;
  expectBad(r, "id index 1");
  r = req;
  r.timeoutMs = -5;
  expectBad(r, "timeout");
  r = req;
  r.header.bytes = 0xffffffffu;
  expectBad(r, "length field");
  r = req;
  r.header.version = 1;
  expectBad(r, "version 1");
  r = req;
  r.header.kind = 0x41414141;
  expectBad(r, "unknown message kind");
  r = req;
  r.listenAddr = SocketAddress();
  expectBad(r, "listener address");

  MessageHeader mh{5, 0, kMaxPeerMessageBytes}, mo;
  EXPECT_TRUE(decodeMessageHeader(&mh, sizeof(mh), &mo, &why));
  mh.bytes = UINT64_MAX;
  EXPECT_FALSE(decodeMessageHeader(&mh, sizeof(mh), &mo, &why));
  EXPECT_NE(why.find("exceeds"), std::string::npos) << why;
  PeerHello hello{2, 3}, ho;
  EXPECT_TRUE(decodePeerHello(&hello, sizeof(hello), 4, &ho, &why));
  EXPECT_FALSE(decodePeerHello(&hello, sizeof(hello), 3, &ho, &why));
  hello = PeerHello{9, 0};
  EXPECT_FALSE(decodePeerHello(&hello, sizeof(hello), 3, &ho, &why));

  // Random bytes never decode into a root message (and never crash).
  std::mt19937_64 rng(11);
  RootBoundMessage m;
  for (int i = 0; i < 2000; ++i) {
    std::vector<unsigned char> bytes(rng() % (sizeof(RootReport) + 64));
    for (auto& c : bytes) c = static_cast<unsigned char>(rng());
    EXPECT_FALSE(decodeRootBound(bytes.data(), bytes.size(), &m, &why));
  }
}

// A listener served by a SocketAcceptor on a thread, for the acceptor's own tests.
struct AcceptorFixture {
  Socket listener;
  SocketAcceptor acceptor;
  std::atomic<int> accepted{0};
  std::atomic<bool> stop{false};
  std::thread server;
  AcceptorFixture(const SocketKey& key, AuthMode mode) {
    SocketAddress lo;
    EXPECT_EQ(SocketAddress::parse("127.0.0.1:0", &lo), ncclSuccess);
    EXPECT_EQ(Socket::listen(lo, &listener), ncclSuccess);
    acceptor.start(&listener, key, SocketType::kBootstrap, mode, 1000, "test listener");
    server = std::thread([this] {
      std::vector<pollfd> fds;
      std::vector<Socket> ready, keep;
      while (!stop) {
        fds.clear();
        acceptor.pollFds(&fds);
        ::poll(fds.data(), fds.size(), 20);
        acceptor.progress(&ready);
        for (Socket& s : ready) keep.push_back(std::move(s));
        accepted = static_cast<int>(keep.size());
        ready.clear();
      }
    });
  }
  ~AcceptorFixture() {
    stop = true;
    server.join();
  }
  bool waitAccepted(int n, int64_t ms) {
    int64_t end = nowMs() + ms;
    while (accepted < n && nowMs() < end) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return accepted >= n;
  }
};

int rawDial(const SocketAddress& a) {
  int fd = ::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(fd, &a.sa, a.length()), 0);
  return fd;
}

TEST(BootstrapSecurityTest, AcceptorServesGenuineCallersPastTwoHundredSilentOnes) {
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(newId(), &info), ncclSuccess);
  for (AuthMode mode : {AuthMode::kChallenge, AuthMode::kClientFirst}) {
    AcceptorFixture f(info.key(), mode);
    std::vector<int> silent;
    for (int i = 0; i < 200; ++i) silent.push_back(rawDial(f.listener.localAddress()));
    int64_t start = nowMs();
    Socket s;
    ASSERT_EQ(Socket::connect(f.listener.localAddress(), info.key(), SocketType::kBootstrap,
                              SocketWait::in(5000, nullptr, "x"), &s, mode),
              ncclSuccess);
    EXPECT_TRUE(f.waitAccepted(1, 5000));
    int64_t took = nowMs() - start;
    EXPECT_LT(took, 500) << "the genuine caller waited behind the silent ones";
    for (int fd : silent) ::close(fd);
  }
}

TEST(BootstrapSecurityTest, PeerListenerRefusesWrongSecretsAndReplays) {
  UniqueIdInfo info;
  ASSERT_EQ(parseUniqueId(newId(), &info), ncclSuccess);
  AcceptorFixture f(info.key(), AuthMode::kClientFirst);
  const SocketAddress& at = f.listener.localAddress();
  uint8_t nonce[kAuthNonceBytes] = {1, 2, 3};
  uint8_t proof[kClientProofBytes];
  encodePeerProof(info.key(), static_cast<int32_t>(SocketType::kBootstrap), at.toString(), nonce, proof);
  int first = rawDial(at);
  ASSERT_EQ(::send(first, proof, sizeof(proof), MSG_NOSIGNAL), (ssize_t)sizeof(proof));
  EXPECT_TRUE(f.waitAccepted(1, 3000));
  int replay = rawDial(at);  // the same bytes again
  ASSERT_EQ(::send(replay, proof, sizeof(proof), MSG_NOSIGNAL), (ssize_t)sizeof(proof));
  SocketKey wrong = info.key();
  wrong.secret[0] ^= 0x80;
  uint8_t nonce2[kAuthNonceBytes] = {9};
  encodePeerProof(wrong, static_cast<int32_t>(SocketType::kBootstrap), at.toString(), nonce2, proof);
  int forged = rawDial(at);  // a spoofed "I am rank 0" would follow; it is never read
  ASSERT_EQ(::send(forged, proof, sizeof(proof), MSG_NOSIGNAL), (ssize_t)sizeof(proof));
  // Both are closed by the listener: reads see EOF.
  for (int fd : {replay, forged}) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 3000), 1);
    char c;
    EXPECT_EQ(::recv(fd, &c, 1, 0), 0);
  }
  EXPECT_EQ(f.accepted.load(), 1);
  for (int fd : {first, replay, forged}) ::close(fd);
}

TEST(BootstrapSecurityTest, HugeNranksIsInvalidArgument) {
  auto id = newId();
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::create(&id, 1, options(0, INT32_MAX), &b), ncclInvalidArgument);
  EXPECT_NE(std::string(lastErrorText()).find("nranks 2147483647 exceeds the maximum"), std::string::npos)
      << lastErrorText();
  EXPECT_EQ(Bootstrap::create(&id, 1, options(0, kMaxRanks + 1), &b), ncclInvalidArgument);
}

TEST(RankBlockTest, NoOverflowAtTheLimits) {
  EXPECT_EQ(rootOfRank(INT32_MAX, 1, INT32_MAX - 1), 0);
  EXPECT_EQ(rankBlock(INT32_MAX, 1, 0).count, INT32_MAX);
  RankBlock last = rankBlock(kMaxRanks, 7, 6);
  EXPECT_EQ(last.first + last.count, kMaxRanks);
  EXPECT_EQ(rootOfRank(kMaxRanks, 7, kMaxRanks - 1), 6);
}

}  // namespace
}  // namespace accl
