// ChannelPeers: who this rank talks to on one channel — its ring (the rank at every position and
// its own position) and its tree (parent and children) — and whether those connections exist
// yet. Built by the engine at init, read by the schedules' wiring on every backend.
#pragma once

#include <vector>

#include "device/common/topology_view.h"

namespace accl {

// Most channels a communicator uses (plans and channel tables are sized by it).
constexpr int kMaxChannels = 16;

struct ChannelPeers {
  std::vector<int> ringRanks;  // rank at each ring position
  int ringIndex = 0;           // this rank's position
  TreeView tree{};             // this channel's tree (double binary tree: channel parity picks one)
  bool ringConnected = false;
  bool treeConnected = false;

  RingView ringView() const { return RingView{static_cast<int>(ringRanks.size()), ringIndex, ringRanks.data()}; }
};

}  // namespace accl
