// One rank's whole run: communicator init, buffers, and for every plan step the nccl-tests sequence
// (one untimed call, `iters` timed calls, then `checks` checked calls), reporting each step's time and
// wrong-element count over its channel. Every library failure becomes an error record with
// ncclGetErrorString and ncclGetLastError text; nothing here prints to stdout.
#pragma once

#include "nccl.h"
#include "options.h"
#include "plan.h"

namespace accl::bench {

struct RankContext {
  const Options* opts = nullptr;
  const Plan* plan = nullptr;
  int rank = 0;
  int nranks = 1;
  int localIndex = 0;  // index among the ranks of this host (picks the CUDA device)
  ncclUniqueId id{};
  int fd = -1;         // report channel (write end)
  bool closeFd = true; // close the channel when the rank is done
  bool cuda = false;   // CUDA backend (else host backend)
};

// Returns the rank's exit code (0 when every step ran; wrong data is the reporter's business).
int runRank(const RankContext& ctx);

}  // namespace accl::bench
