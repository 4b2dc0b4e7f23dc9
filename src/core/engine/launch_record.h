// LaunchRecord: enqueue's hook (core/engine/enqueue.cc runComm) into the activity records and the
// consistency check. For one launch of one communicator it
//   - gives the launch its sequence numbers (collectives are numbered from 1 per communicator;
//     send/recv-only launches have their own count),
//   - records it as the rank's current operation for accl-ras (activity/ras_comms.h) until
//     destroyed,
//   - and, when the communicator was created with ACCL_CHECK_COLLECTIVES=1, compares its
//     collectives with every other rank's before anything runs (core/engine/coll_consistency.h).
// Usage: construct, add every task in launch order, start() before planning; the destructor
// marks the rank idle again. A communicator without an activity record (not added) makes it do
// nothing.
#pragma once

#include <memory>
#include <vector>

#include "activity/ras_comms.h"
#include "core/engine/coll_consistency.h"
#include "core/engine/enqueue.h"

namespace accl {

class LaunchRecord {
 public:
  explicit LaunchRecord(ncclComm* comm);
  ~LaunchRecord();
  LaunchRecord(const LaunchRecord&) = delete;
  LaunchRecord& operator=(const LaunchRecord&) = delete;

  void addColl(const CollCall& call);
  void addP2p(const P2pCall& call);
  // Marks the launch as running and runs the consistency check when it is on. On a mismatch
  // every rank returns ncclInvalidUsage; the launch must then not run (its sequence numbers are
  // not used up, so the communicator stays consistent).
  ncclResult_t start();

 private:
  // Records op_ as the rank's current operation in the writers' copy of the activity record;
  // returns its first collective sequence number.
  uint64_t markRunning();

  ncclComm* comm_;
  RasComm* rec_;  // the engine's (the caller holds the communicator); null: no record
  RasOp op_;
  const char* firstName_ = nullptr;
  std::vector<CollSignature> sigs_;  // filled only when checking
  bool running_ = false;
};

}  // namespace accl
