// PeerFailure and CommHealth: what one communicator knows about a failed peer. The liveness
// service (core/liveness/liveness.h) writes it when it finds a member process exited, frozen or
// unreachable, or when another member tells it so; the host waits read it to end with an error
// that names the failed rank, its host and pid and what was seen, whichever peer they waited on.
// The first failure recorded wins: every survivor names the same rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace accl {

enum class PeerFailureKind : int32_t {
  kExited = 1,    // its process exited (its heartbeat connection closed, or the pid is gone)
  kFrozen = 2,    // no heartbeat for longer than ACCL_HEARTBEAT_TIMEOUT_MS (stopped, hung, starved)
  kLinkLost = 3,  // the network path to it failed (connection reset, unreachable)
  kClosed = 4,    // its process lives, but it closed this communicator mid-operation (abort, destroy)
};

const char* peerFailureKindName(PeerFailureKind kind);

struct PeerFailure {
  int rank = -1;          // the failed rank (the lowest of its process's ranks in this communicator)
  std::string ranks;      // every rank of that process in this communicator, e.g. "2" or "2,3"
  std::string host;       // its host name
  int pid = 0;            // its process id (on its host)
  PeerFailureKind kind = PeerFailureKind::kExited;
  int64_t silentMs = 0;   // kFrozen: how long no heartbeat arrived
  int detectedBy = -1;    // the rank whose process saw it first
  std::string detail;     // what exactly was seen, e.g. "heartbeat connection closed"
};

// One communicator's failure record, shared by its liveness registration and its waits.
class CommHealth {
 public:
  explicit CommHealth(int rank) : rank_(rank) {}

  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Records `f` unless a failure is already recorded; true when this one was recorded.
  bool record(const PeerFailure& f);
  // The recorded failure (meaningful once failed()).
  PeerFailure failure() const;
  // "rank 2 (host node7, pid 4242) exited: heartbeat connection closed (seen by rank 1)".
  std::string describe() const;
  int rank() const { return rank_; }

 private:
  const int rank_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  PeerFailure failure_;
};

std::string describePeerFailure(const PeerFailure& f);

}  // namespace accl
