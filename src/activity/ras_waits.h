// The waits in progress, for accl-ras's "waiting for rank N": a host-backend wait that has
// stopped spinning and sleeps (backend/host/host_wait.cc) puts a note here for as long as it
// sleeps; the status server lists the notes of a communicator (ras/ras_snapshot.h copies them).
//
// A note is keyed by an opaque pointer that identifies the communicator without this layer
// knowing what one is: the address of its abort flag (what every wait already carries). Notes are
// only taken on the sleeping slow path, never on the spinning fast path, so the lock they take is
// paid at most once per long wait.
#pragma once

#include <cstdint>
#include <vector>

namespace accl {

// RAII: registers "the communicator `key` waits for rank `peer`" until destroyed.
class RasWaitNote {
 public:
  RasWaitNote(const void* key, int peer);
  ~RasWaitNote();
  RasWaitNote(const RasWaitNote&) = delete;
  RasWaitNote& operator=(const RasWaitNote&) = delete;

 private:
  uint64_t id_;
};

struct RasWait {
  int peer;
  int64_t sinceNs;  // accl::nowNs() when the wait started sleeping
};

// The waits of the communicator `key` now in progress, oldest first (one per waiting thread: a
// rank's channels may wait on different peers).
std::vector<RasWait> rasWaitsOf(const void* key);

// Fork support (ras/ras_server.cc): lock before fork, unlock in both processes after; in the child,
// forget the parent's notes (their threads do not exist there).
void rasWaitsLockForFork();
void rasWaitsUnlockAfterFork(bool inChild);

}  // namespace accl
