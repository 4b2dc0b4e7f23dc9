// Shared parts of net_matrix_rank, the rank program that tests/netns/net_matrix.sh runs under
// multihost.sh (one process per rank, every namespace a host): the rank's place in the job (from
// multihost.sh's ACCL_MH_* variables), a reporter that prints what a RankContext records, and the
// three modes: the collective matrix, faults during large all-reduces, and a wire attacker.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "support/rank_launcher.h"

namespace accl::test {

// The rank's place in the multihost job.
struct MhRank {
  int rank = 0;
  int nranks = 1;
  int localRank = 0;
  int host = 0;
  int nhosts = 1;
  std::string netnsPrefix;  // host h is the namespace <prefix>-h<h>
  std::string tag;          // "rank 3 (host 1)" for messages
};
// Reads ACCL_MH_RANK / _NRANKS / _LOCAL_RANK / _HOST / _NHOSTS / _NETNS; false (and a message)
// when they are missing or inconsistent.
bool readMhRank(MhRank* out);

// A RankContext whose records are printed as they arrive: failures as "FAIL <tag>: ..." on
// stderr, notes as "<tag>: ..." on stdout.
class PrintingContext {
 public:
  explicit PrintingContext(const MhRank& me);
  ~PrintingContext();
  RankContext& ctx() { return *ctx_; }
  bool failed() const { return ctx_->failed(); }

 private:
  std::vector<ncclUniqueId> ids_;
  int pipe_[2] = {-1, -1};
  std::unique_ptr<RankContext> ctx_;
  std::thread reader_;
};

// The unique id: ncclGetUniqueId with NCCL_COMM_ID set gives every rank the same id (the root is
// hosted by rank 0 at that address); without it the id is read from ACCL_NM_ID_FILE, written by
// rank 0. False with a message when neither works.
bool sharedUniqueId(const MhRank& me, ncclUniqueId* id);

// Every rank's ncclCommInitRank on the shared unique id: the communicator, or null with the
// failure recorded in `ctx`.
ncclComm_t initJobComm(const MhRank& me, RankContext& ctx);

// "4 ranks / 2 hosts", for the launch names of a mode's cases.
std::string jobShape(const MhRank& me);

// Milliseconds since the epoch (CLOCK_REALTIME: the same clock in every namespace of the host).
double wallMs();
double envDouble(const char* name, double fallback);

// Modes; each returns the process exit status (0 = every check passed).
int runMatrixMode(const MhRank& me, const std::string& which);  // which: "all" or "allreduce"
int runFaultMode(const MhRank& me, const std::string& kind);     // linkdown | qperror | kill
int runAttackMode(const MhRank& me);
int runZeroCopyMode(const MhRank& me);  // large steps sent from the user's buffers
int runStepsMode(const MhRank& me);     // step sizes of a communicator across hosts
int runCryptMode(const MhRank& me, const std::string& kind);  // wire | key | missing | plaintext

}  // namespace accl::test
