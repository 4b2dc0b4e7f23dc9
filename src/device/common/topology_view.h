// What a schedule knows about its channel's peers: the ring (this rank's position and the rank at
// every position) and the tree (parent and children). Filled by the channel setup (src/core) and
// read by the schedules (src/algos) and kept per channel by the device (DevChannel); the Prims
// already holds the connections to these peers.
#pragma once

#include "device/common/host_device.h"

namespace accl {

constexpr int kMaxRanksInView = 1024;  // ring positions a view can hold (host and device copies)
constexpr int kMaxTreeChildren = 3;    // two children across nodes plus one in the node's chain

struct RingView {
  int nranks;
  int index;  // this rank's position in the ring
  const int* userRanks;  // userRanks[position] = rank at that position (nranks entries)

  ACCL_HOST_DEVICE int rankAt(int position) const {
    int p = position % nranks;
    return userRanks[p < 0 ? p + nranks : p];
  }
};

struct TreeView {
  int up;                          // parent rank, -1 at the root
  int down[kMaxTreeChildren];      // children, -1 where absent
  ACCL_HOST_DEVICE int nDown() const {
    int n = 0;
    for (int i = 0; i < kMaxTreeChildren; ++i) n += down[i] >= 0;
    return n;
  }
};

}  // namespace accl
