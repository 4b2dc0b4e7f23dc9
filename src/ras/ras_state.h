// RAS state: what this process knows about its communicators for accl-ras (ras_server.h). Every
// communicator is added when its init completes and removed when it is freed; for each, a copy of
// its identity (comm hash, rank, size, peers' pids and hosts), the collective sequence number,
// and the operation its rank runs now (or ran last).
//
// Writers are the rank's own threads (ras/op_batch.h, once per launch, under a per-communicator
// lock); the reader is the status server, which copies a snapshot and formats it without holding
// any lock, so a slow client never holds up a collective. The identity is copied at add time, so
// a snapshot never reads a communicator that is being freed: only its async-error and abort words
// are read, under the table lock that removal takes before the communicator goes away.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/peer_failure.h"
#include "ras/ras_waits.h"

struct ncclComm;

namespace accl {

// One operation as accl-ras prints it: the first collective of a launch (or its first send/recv)
// and how many of each the launch holds.
struct RasOp {
  int func = -1;         // FuncId of the first collective; -1: a send/recv-only launch
  uint64_t seq = 0;      // the first collective's sequence number (1 = the comm's first), or the send/recv batch's
  uint64_t count = 0;
  int type = -1;         // ncclDataType_t
  int op = -1;           // ncclRedOp_t; -1 when the function does not reduce
  int root = -1;         // -1 when the function has no root
  int nColl = 0;         // collectives in the launch
  int nP2p = 0;          // sends and receives in the launch
  int firstPeer = -1;    // the first send/recv's peer
  bool firstIsSend = false;
};

// "AllReduce #42 (count 1024 float sum)", "Broadcast #3 (count 8 int32 root 1) + 2 more
// collectives", "send/recv batch #7 (send to 1, 3 ops)".
std::string rasOpText(const RasOp& op);

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
  std::shared_ptr<const CommHealth> health;  // liveness's failure record (core/liveness.h); may be null
};

// What its rank does: written by the rank's launches (ras/op_batch.h) under RasComm::mutex.
struct RasActivity {
  uint64_t collSeq = 0;      // collectives launched (the sequence number of the last one)
  uint64_t p2pBatches = 0;   // send/recv-only launches
  bool busy = false;
  RasOp current;             // valid while busy
  int64_t currentSinceNs = 0;
  bool hasLast = false;
  RasOp last;                // the last finished launch
  int64_t lastEndNs = 0;
  std::string lastNote;      // why the last launch ended early ("failed the consistency check"), or ""
};

// The per-communicator record.
class RasComm : public RasIdentity, public RasActivity {
 public:
  const ncclComm* comm = nullptr;
  const void* waitKey = nullptr;  // the key of its waits (ras_waits.h)
  int64_t addedNs = 0;
  std::mutex mutex;  // guards the RasActivity part
};

// Adds a communicator that just finished its init (core/comm_init.cc); starts the status server
// with the process's first communicator unless NCCL_RAS_ENABLE=0.
void rasAddComm(ncclComm* comm);
// Removes it (core/comm.cc, before anything is freed); stops the server after the last one.
void rasRemoveComm(ncclComm* comm);
// The record of a communicator, or null when it was never added (init not finished) or removed.
std::shared_ptr<RasComm> rasFindComm(const ncclComm* comm);
size_t rasCommCount();

// What a rank of this process runs now, for a log line of a long wait: "AllReduce #42 (count
// 1024 float sum) for 3.2 s", or "" when the communicator whose waits carry `waitKey` is idle or
// unknown.
std::string rasCurrentOpText(const void* waitKey);

// A copy of one record plus the volatile words of its communicator, taken for a report.
struct RasCommSnapshot : RasIdentity, RasActivity {
  std::vector<RasWait> waits;
  int asyncResult = 0;  // ncclResult_t; ncclInProgress while nothing went wrong
  int state = 0;        // CommState
  int abortFlag = 0;  // 1: ncclCommAbort; kAbortByPeerFailure: liveness stopped it
};
std::vector<RasCommSnapshot> rasSnapshot();

// Fork support (ras_server.cc).
void rasStateLockForFork();
void rasStateUnlockAfterFork(bool inChild);

}  // namespace accl
