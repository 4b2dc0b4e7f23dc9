// The process's registry of communicators for accl-ras: core adds every communicator when its
// init completes and removes it when it is freed; for each, a copy of its identity (comm hash,
// rank, size, peers' pids and hosts), the collective sequence number, and the operation its rank
// runs now (or ran last).
//
// Writers are the rank's own threads: core/comm/comm_init.cc fills the identity from plain data once,
// at add time, and the launch path (core/engine/launch_record.h) writes the activity twice per
// launch, without a lock (a sequence lock that readers retry on). Nothing here reads a
// communicator: its handle is only a key.
// Readers copy records and format them without holding any lock, so a slow client never holds up
// a collective; a reader that needs a communicator's own words (ras/ras_snapshot.h) reads them in
// rasListComms's callback, under the table lock that removal takes before the communicator goes
// away.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "activity/ras_op.h"
#include "activity/seq_published.h"

struct ncclComm;  // the public handle type (nccl.h): only a key here

namespace accl {

// One peer of a communicator, as this process sees it.
struct RasPeer {
  int pid = 0;
  bool sameHost = false;     // same host identity as this process
  bool sameProcess = false;  // a rank of this very process
};

// What a communicator is, copied once when it is added (before the record is shared).
struct RasIdentity {
  uint64_t commHash = 0;
  int rank = -1;
  int nranks = 0;
  int cudaDev = 0;
  std::string name;  // ncclConfig_t.commName
  std::vector<RasPeer> peers;
  bool checkCollectives = false;  // ACCL_CHECK_COLLECTIVES when the communicator was created
};

// What its rank does, as its launches leave it (trivially copyable: published without a lock,
// activity/seq_published.h). The fields each of the two writes of a launch changes are adjacent.
struct RasLaunchState {
  // Written when a launch starts.
  uint64_t collSeq = 0;      // collectives launched (the sequence number of the last one)
  uint64_t p2pBatches = 0;   // send/recv-only launches
  int64_t currentSinceNs = 0;
  RasOp current;             // valid while busy
  // Written by both.
  bool busy = false;
  bool hasLast = false;
  // Written when it ends.
  RasOp last;                // the last finished launch
  int64_t lastEndNs = 0;
};

// A reader's copy of what its rank does.
struct RasActivity : RasLaunchState {
  std::string lastNote;      // why the last launch ended early ("failed the consistency check"), or ""
};

// The per-communicator record.
class RasComm : public RasIdentity {
 public:
  const ncclComm* comm = nullptr;  // the public handle: a key, never followed here
  const void* waitKey = nullptr;   // the key of its waits (ras_waits.h)
  int64_t addedNs = 0;

  // Readers, any thread.
  RasLaunchState launchState() const { return published_.read(); }
  RasActivity activity() const;

  // The launch path (core/engine/launch_record.h): launches of one communicator do not overlap
  // (NCCL's rule for a communicator), so one thread at a time writes. `state` is the writers'
  // own copy; publishStart / publishEnd make what a launch's start / end changed in it visible.
  RasLaunchState state;
  void publishStart() { published_.publish(state, 0, offsetof(RasLaunchState, last)); }
  void publishEnd() { published_.publish(state, offsetof(RasLaunchState, busy), sizeof(RasLaunchState)); }
  // The note of the last launch (rare: a failed consistency check); "" clears it.
  void setLastNote(std::string note);
  bool hasLastNote() const { return hasNote_.load(std::memory_order_relaxed); }

 private:
  SeqPublished<RasLaunchState> published_;
  mutable std::mutex noteMutex_;
  std::string lastNote_;
  std::atomic<bool> hasNote_{false};
};

// Adds a communicator that just finished its init (core/comm/comm_init.cc), then tells the listener.
void rasAddComm(const ncclComm* comm, const void* waitKey, RasIdentity identity);
// Removes it (core/comm/comm.cc, before anything is freed), then tells the listener when it was listed.
void rasRemoveComm(const ncclComm* comm);
// The record of a communicator, or null when it was never added (init not finished) or removed.
std::shared_ptr<RasComm> rasFindComm(const ncclComm* comm);
size_t rasCommCount();

// The records listed now, oldest first. `whileListed`, when given, runs for each of them under the
// table lock, while no communicator can be removed (and so freed).
std::vector<std::shared_ptr<RasComm>> rasListComms(const std::function<void(const RasComm&)>& whileListed = {});

// What a rank of this process runs now, for a log line of a long wait: "AllReduce #42 (count
// 1024 float sum) for 3.2 s", or "" when the communicator whose waits carry `waitKey` is idle or
// unknown.
std::string rasCurrentOpText(const void* waitKey);

// Called after every add and every removal, outside the table lock, so that the RAS status server
// (ras/ras_server.h) runs while communicators exist. The API layer sets it before it creates a
// communicator; null (the start): nobody is told.
void rasSetCommsChangedListener(void (*listener)());

// Fork support (ras/ras_server.cc).
void rasCommsLockForFork();
void rasCommsUnlockAfterFork(bool inChild);

}  // namespace accl
