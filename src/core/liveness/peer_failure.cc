// CommHealth: the first failure recorded for a communicator, and its text (see peer_failure.h).
#include "core/liveness/peer_failure.h"

#include <cstdio>

namespace accl {

const char* peerFailureKindName(PeerFailureKind kind) {
  switch (kind) {
    case PeerFailureKind::kExited: return "exited";
    case PeerFailureKind::kFrozen: return "frozen";
    case PeerFailureKind::kLinkLost: return "link lost";
    case PeerFailureKind::kClosed: return "closed its communicator";
  }
  return "failed";
}

bool CommHealth::record(const PeerFailure& f) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_.load(std::memory_order_relaxed)) return false;
  failure_ = f;
  failed_.store(true, std::memory_order_release);
  return true;
}

PeerFailure CommHealth::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

std::string CommHealth::describe() const { return describePeerFailure(failure()); }

std::string describePeerFailure(const PeerFailure& f) {
  char what[160];
  if (f.kind == PeerFailureKind::kFrozen)
    snprintf(what, sizeof(what), "frozen: no heartbeat for %lld ms", static_cast<long long>(f.silentMs));
  else
    snprintf(what, sizeof(what), "%s", peerFailureKindName(f.kind));
  char text[512];
  snprintf(text, sizeof(text), "%s %s (host %s, pid %d) %s%s%s (seen by rank %d)",
           f.ranks.find(',') == std::string::npos ? "rank" : "ranks", f.ranks.empty() ? "?" : f.ranks.c_str(),
           f.host.empty() ? "?" : f.host.c_str(), f.pid, what, f.detail.empty() ? "" : ": ", f.detail.c_str(),
           f.detectedBy);
  return text;
}

}  // namespace accl
