// Runs collective matrix cases on one rank's communicator through the public API and records
// every failure through the RankContext, described as
//   [launch] rank R: <case>: <what went wrong>
// with up to kMaxMismatchesPerCase wrong elements (buffer, index, expected, got) per case and up
// to kMaxReportedCases described cases per rank (the rest are counted).
#pragma once

#include <string>

#include "mp/collective_expect.h"
#include "support/rank_launcher.h"

namespace accl::test {

inline constexpr size_t kMaxMismatchesPerCase = 3;
inline constexpr int kMaxReportedCases = 10;

// The NCCL entry point a collective case calls ("ncclAllReduce", ...).
const char* collCallName(Coll coll);

// How a case calls the library: the plain entry point, or its nccl*Config variant with `config`
// (which may be NULL: the plain call again). Bcast has no Config variant: ncclBroadcastConfig
// with sendbuff == recvbuff.
struct CallVia {
  bool configVariant = false;
  const ncclCollConfig_t* config = nullptr;
};

// Issues the collective with the given pointers (stream NULL) and returns its result.
ncclResult_t callCollective(const CaseSpec& cs, const void* sendbuff, void* recvbuff, ncclRedOp_t op,
                            ncclComm_t comm, CallVia via = {});

class CollectiveRunner {
 public:
  CollectiveRunner(RankContext& ctx, ncclComm_t comm, std::string launch, CallVia via = {});

  // Runs one case: prepares the buffers, creates the PreMulSum op if the case has one, calls the
  // collective, checks every element (guards included) and destroys the op. Returns false when a
  // call failed: the ranks may then disagree about what runs next, so the launch should stop.
  bool run(const CaseSpec& cs);

  // Records a note with the totals, and a failure naming them if any case failed.
  void finish(size_t plannedCases);

  int casesRun() const { return run_; }
  int casesFailed() const { return failed_; }

 private:
  void caseFailure(const CaseSpec& cs, const std::string& what);

  RankContext& ctx_;
  ncclComm_t comm_;
  std::string launch_;
  CallVia via_;
  HostBuffer buffers_[2];
  int run_ = 0;
  int failed_ = 0;
};

}  // namespace accl::test
