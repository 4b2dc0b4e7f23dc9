// ChannelPeers: who this rank talks to on one channel — its ring (the rank at every position and
// its own position) and its tree (parent and children) — and whether those connections exist
// yet. Built by the engine at init, read by the schedules' wiring on every backend.
#pragma once

#include <vector>

#include "device/common/topology_view.h"

namespace accl {

// Most channels a communicator uses (plans and channel tables are sized by it). 32: what NCCL's
// rings reach on an H100 and what the CUDA kernel arguments describe (kArgMaxChannels). NCCL's
// own ceiling is 64 (MAXCHANNELS); config min/maxCTAs and NCCL_MIN/MAX_NCHANNELS above 32 are
// accepted and clamped here. A backend may cap lower (the host backend stops at 16).
constexpr int kMaxChannels = 32;

struct ChannelPeers {
  std::vector<int> ringRanks;  // rank at each ring position
  int ringIndex = 0;           // this rank's position
  TreeView tree{};             // this channel's tree (double binary tree: channel parity picks one)
  bool ringConnected = false;
  bool treeConnected = false;
  bool allConnected = false;  // to every other rank both ways (the host one-shot all-reduce)

  RingView ringView() const { return RingView{static_cast<int>(ringRanks.size()), ringIndex, ringRanks.data()}; }
};

}  // namespace accl
