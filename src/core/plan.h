// A plan: what one communicator runs for one group, per channel, in call order. A channel's
// list holds collective work items and batches of point-to-point transfers (the transfers of
// consecutive send/recv calls, progressed together so that any pattern of sends and receives
// inside a group completes).
#pragma once

#include <cstdint>
#include <vector>

#include "device/common/work.h"

namespace accl {

struct PlanItem {
  bool isColl = true;
  // isColl only: a small all-reduce done in one round, every rank sending its whole vector to
  // every other and reducing locally in rank order (host backend; see host_one_shot.h).
  bool oneShot = false;
  CollWork coll{};
  // isColl only: ncclCollConfig_t.userProfilerTag of the call (0: untagged), for a profiler.
  uint64_t profilerTag = 0;
  std::vector<P2pWork> p2p;  // when !isColl
};

struct Plan {
  std::vector<std::vector<PlanItem>> channels;  // channels[c] = items of channel c, in order
  int nChannelsUsed = 0;
};

}  // namespace accl
