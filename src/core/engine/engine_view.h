// EngineView: the narrow view of a communicator's engine that a backend gets (core/engine/backend.h) —
// the communicator's fixed facts, its channels' peers, its connections and its plan pool — so
// that no backend reaches into ncclComm or CommEngine. Connecting the peers a plan uses is
// core's own walk (CommEngine::connectPlan); a backend only hears which links of each channel
// are ready (CommBackend::publishConnections).
#pragma once

#include <atomic>
#include <memory>

#include "core/engine/channel_peers.h"
#include "core/engine/connections.h"
#include "core/engine/plan.h"
#include "device/common/fifo.h"

namespace accl {

class CommEngine;
namespace prof {
class CommProfiler;
}

// What a backend may know of its communicator; fixed at init.
struct CommFacts {
  const void* comm = nullptr;  // the ncclComm, for log lines only
  int rank = 0;
  int nRanks = 1;
  int localRanks = 1;       // ranks of this communicator on this node
  int nNodes = 1;
  int cudaDev = 0;          // this rank's GPU (CUDA backend)
  int ranksOnMyDevice = 1;  // ranks of this communicator on this rank's GPU (same host, same bus id)
  int ranksOnBusiestDevice = 1;  // the most ranks of this communicator on any one GPU (every rank agrees)
  int processesOnMyDevice = 1;   // processes with ranks of this communicator on this rank's GPU
  int minCTAs = 1;          // ncclConfig_t channel bounds (NCCL_MIN_CTAS / NCCL_MAX_CTAS applied)
  int maxCTAs = kMaxChannels;
  const std::atomic<int>* abortFlag = nullptr;  // raised by ncclCommAbort and by peer failures
  prof::CommProfiler* profiler = nullptr;       // the profiler plugin's context; null: none
};

class EngineView {
 public:
  EngineView() = default;
  explicit EngineView(CommEngine* engine) : engine_(engine) {}

  const CommFacts& facts() const;
  int nChannels() const;
  // The slot layout of the FIFOs this rank receives on (the backend's own, fixed at init).
  const FifoLayout& layout() const;
  const ChannelPeers& channel(int c) const;
  // This rank's connection to send to / receive from `peer` on `channel`, or null when core has
  // not connected that pair.
  Connection* connection(int channel, int peer, bool isSend) const;
  // Gives a launch's plan back to the communicator's pool once the launch has completed.
  void recycle(std::unique_ptr<Plan> plan) const;
  // Whether [ptr, ptr + bytes) lies inside one buffer registered with ncclCommRegister on this
  // communicator; *out gets that buffer. For zero-copy sends over a device that needs registered
  // memory (ConnEnd::userSendRegisteredOnly); takes the registry's lock.
  bool registeredBuffer(const void* ptr, size_t bytes, UserBufferReg* out) const;

 private:
  CommEngine* engine_ = nullptr;
};

}  // namespace accl
