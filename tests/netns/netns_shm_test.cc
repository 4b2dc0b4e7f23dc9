// Ranks in separate network + PID + UTS (+ mount) namespaces, i.e. two containers of one machine
// that are two hosts to accl (different hostnames): collectives between them must either be
// correct or fail with an error that names both ranks and why they cannot share memory. Never
// ncclSuccess with wrong data (issue 9, problem 6: the shm transport used to open
// /proc/<pid>/fd/<fd> of a pid that, in the sender's namespace, is another process or itself).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "netns_pair.h"

namespace accl::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kAllReduceCount = 1 << 16;  // floats per rank
constexpr size_t kAllGatherCount = 1 << 14;  // floats per rank

void copyLastError(NetnsRankReport* report) {
  std::snprintf(report->lastError, sizeof(report->lastError), "%s", ncclGetLastError(nullptr));
}

bool exchangeId(int rank, int idRead, int idWrite, ncclUniqueId* id) {
  if (rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) return false;
    return write(idWrite, id, sizeof(*id)) == (ssize_t)sizeof(*id);
  }
  size_t got = 0;
  while (got < sizeof(*id)) {
    ssize_t r = read(idRead, reinterpret_cast<char*>(id) + got, sizeof(*id) - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// The body of each rank: init, one all-reduce and one all-gather, each checked element by element.
void allReduceAndAllGather(int rank, int idRead, int idWrite, NetnsRankReport* report) {
  setenv("ACCL_BACKEND", "host", 1);
  setenv("NCCL_SOCKET_IFNAME", "acclv", 1);  // the veth end in this namespace
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  setenv("ACCL_BOOTSTRAP_TIMEOUT_MS", "10000", 1);
  setenv("ACCL_TIMEOUT_MS", "20000", 1);  // a collective that cannot progress fails instead of hanging
  ncclUniqueId id;
  if (!exchangeId(rank, idRead, idWrite, &id)) {
    std::snprintf(report->lastError, sizeof(report->lastError), "unique id exchange failed: %s",
                  ncclGetLastError(nullptr));
    return;
  }
  auto start = std::chrono::steady_clock::now();
  ncclComm_t comm = nullptr;
  report->initResult = ncclCommInitRank(&comm, 2, id, rank);
  report->initSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report->initResult != ncclSuccess) {
    copyLastError(report);
    return;
  }
  std::vector<float> buf(kAllReduceCount);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>((rank + 1) * 1000 + i % 997);
  auto arStart = std::chrono::steady_clock::now();
  report->allReduceResult = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
  report->allReduceSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - arStart).count();
  if (report->allReduceResult == ncclSuccess) {
    report->allReduceWrong = 0;
    for (size_t i = 0; i < buf.size(); ++i)
      if (buf[i] != static_cast<float>(3000 + 2 * (i % 997))) report->allReduceWrong++;
  } else {
    copyLastError(report);
  }
  std::vector<float> mine(kAllGatherCount), all(2 * kAllGatherCount, -1.0f);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(rank * 100000 + i);
  report->allGatherResult = ncclAllGather(mine.data(), all.data(), mine.size(), ncclFloat, comm, nullptr);
  if (report->allGatherResult == ncclSuccess) {
    report->allGatherWrong = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] != static_cast<float>((i / kAllGatherCount) * 100000 + i % kAllGatherCount))
        report->allGatherWrong++;
  } else if (report->lastError[0] == 0) {
    copyLastError(report);
  }
  report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ncclCommAbort(comm);
}

TEST(NetnsShmTest, RanksInSeparateNamespacesAreCorrectOrFailClearly) {
  std::string problem = namespaceSupportProblem();
  if (!problem.empty()) GTEST_SKIP() << "cannot build the namespace pair: " << problem;

  NetnsPairResult res = runNamespacePair(allReduceAndAllGather, 60s);
  ASSERT_TRUE(res.built) << res.whyNot;
  ASSERT_FALSE(res.timedOut) << "the ranks did not finish within 60 s";
  for (const NetnsRankReport& r : res.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r.rank) + " on host " + r.hostname);
    ASSERT_TRUE(r.ran) << "the rank did not report: " << r.lastError;
    EXPECT_EQ(r.pidInNamespace, 1) << "the rank must be PID 1 of its own PID namespace";
    ASSERT_EQ(r.initResult, ncclSuccess) << r.lastError;
    std::printf("[ measured ] rank %d (%s): allReduce %s (%ld wrong), allGather %s (%ld wrong); init %.3f s, "
                "allReduce %.3f s; %s\n",
                r.rank, r.hostname, ncclGetErrorString((ncclResult_t)r.allReduceResult), r.allReduceWrong,
                ncclGetErrorString((ncclResult_t)r.allGatherResult), r.allGatherWrong, r.initSeconds,
                r.allReduceSeconds, r.lastError);
    // Never a silent wrong result.
    if (r.allReduceResult == ncclSuccess) {
      EXPECT_EQ(r.allReduceWrong, 0) << "ncclAllReduce: ncclSuccess, wrong data";
    }
    if (r.allGatherResult == ncclSuccess) {
      EXPECT_EQ(r.allGatherWrong, 0) << "ncclAllGather: ncclSuccess, wrong data";
    }
    // No network transport exists yet: a failure must say why, naming both ranks.
    if (r.allReduceResult != ncclSuccess) {
      EXPECT_EQ(r.allReduceResult, ncclSystemError) << r.lastError;
      EXPECT_NE(std::strstr(r.lastError, "cannot share memory"), nullptr) << r.lastError;
      EXPECT_NE(std::strstr(r.lastError, "rank 0"), nullptr) << r.lastError;
      EXPECT_NE(std::strstr(r.lastError, "rank 1"), nullptr) << r.lastError;
      EXPECT_NE(std::strstr(r.lastError, "accl-ns-a"), nullptr) << r.lastError;
      EXPECT_NE(std::strstr(r.lastError, "accl-ns-b"), nullptr) << r.lastError;
      EXPECT_LT(r.allReduceSeconds, 5.0) << "the failure must be found at connection time, not by a timeout";
    }
  }
}

}  // namespace
}  // namespace accl::test
