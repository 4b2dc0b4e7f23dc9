// The network term of the tuner's multi-node models: the NIC a communicator's rank uses (its
// NetDevice's speed and latency), capped by what the topology says of that NIC, and agreed by
// every rank so that all of them predict — and choose — alike.
#pragma once

#include <cstdint>
#include <vector>

#include <string>

#include "tuner/cost_model.h"

namespace accl {

// One rank's view of its network device (0: unknown).
struct TunerNetInfo {
  int32_t speedMbps = 0;
  float latencyUs = 0;
};

// GB/s per node from a device's speed, capped by the topology's NET node (`topoGBps`) when both
// are known; 0 when neither is.
double tunerNetGBps(int speedMbps, double topoGBps);

// The communicator's figure from every rank's: the slowest known speed and the largest latency
// (the ring and the tree run at the pace of their slowest link). Unknown speeds are ignored.
TunerNetInfo tunerNetAgreed(const std::vector<TunerNetInfo>& perRank);

// Sets topo->netGBps / netLatencyUs from the agreed figure when the communicator spans more than
// one node; with one node it leaves them 0 (nothing changes).
void tunerTopoSetNet(const TunerNetInfo& agreed, TunerTopo* topo);

// Without a network device (accl-tune table on a topology file): the topology's NET closest to
// GPU 0 (else to the first CPU) gives topo->netGBps / netLatencyUs when topo->nNodes > 1.
// Returns that NET's name, "" when none was used.
std::string tunerTopoSetNetFromSystem(const TopoSystem& system, TunerTopo* topo);

}  // namespace accl
