// The liveness service behind core/liveness/liveness.h: its wire format (cards exchanged at init, frames
// on the heartbeat connections), what it knows about each member process and registration, and
// the Service itself. liveness_service.cc holds registrations, verdicts and failure propagation;
// liveness_io.cc the sockets and the background loop. Everything is guarded by Service::mutex_.
// The heartbeat connections are util/socket.h Sockets: with encryption on (util/tls_config.h) they
// run TLS 1.3 with the job's pre-shared key like every other connection between processes.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/liveness/peer_failure.h"
#include "nccl.h"
#include "util/socket.h"
#include "util/socket_address.h"

struct ncclComm;

namespace accl::liveness {

// What each rank contributes to the join allgather.
struct Card {
  SocketAddress addr;  // the process's heartbeat listener
  int32_t pid;
  int32_t reserved;
  uint64_t token;      // random per process
  uint64_t keyPart;    // rank 0's is the communicator's key
  char host[64];
};

constexpr uint32_t kFrameMagic = 0x61636c76;  // "aclv"
enum FrameKind : uint32_t { kHello = 1, kBeat = 2, kLeave = 3, kFailed = 4 };

// Every message has this fixed size.
struct Frame {
  uint32_t magic;
  uint32_t kind;
  uint64_t token;   // the sender's process token
  uint64_t target;  // kHello: the receiver's token; kLeave / kFailed: the communicator key
  int32_t rank;     // kLeave: the leaving rank; kFailed: the failed rank
  int32_t detectedBy;
  int32_t failKind;
  int32_t pid;      // kHello: the sender's pid; kFailed: the failed process's pid
  int64_t silentMs;
  char host[64];
  char ranks[64];
  char detail[96];
};

struct Proc {
  uint64_t token = 0;
  SocketAddress addr;
  bool haveAddr = false;
  int pid = 0;
  std::string host;
  Socket out;  // ours to the peer: HELLO, then beats, LEAVEs and FAILEDs
  bool connecting = false;
  std::string outBuf;
  int64_t nextDialMs = 0;
  std::string lastDialError;
  Socket in;  // the peer's to us
  std::string inBuf;
  int64_t lastSeenMs = 0;
  bool dead = false;
};

struct Member {
  uint64_t token = 0;
  bool left = false;
};

struct Registration {
  ncclComm* comm = nullptr;
  uint64_t key = 0;
  int rank = 0;
  std::shared_ptr<CommHealth> health;
  std::vector<Member> members;  // index = rank
};

// A LEAVE that arrived, for registrations made after it (the leaver was faster than this
// process's registration of that rank).
struct Departure {
  uint64_t key;
  uint64_t token;
  int rank;
};

// An accepted connection that has not introduced itself (HELLO) yet.
struct Pending {
  Socket sock;
  int64_t deadlineMs;
  std::string buf;
};

inline std::string errnoText(int err) { return strerror(err); }

inline void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

inline void copyText(char* dst, size_t size, const std::string& s) {
  std::memset(dst, 0, size);
  std::strncpy(dst, s.c_str(), size - 1);
}

inline std::string frameText(const char* s, size_t size) { return std::string(s, strnlen(s, size)); }

uint64_t randomU64();

class Service {
 public:
  // The process's service; never destroyed (its thread runs until the process ends).
  static Service& get();

  ncclResult_t join(ncclComm* comm, const std::shared_ptr<CommHealth>& health);
  void leave(ncclComm* comm);
  void reportExited(const CommHealth* health, int rank);
  void reportClosed(const CommHealth* health, int rank);
  void reportLinkLost(const CommHealth* health, int rank, const std::string& detail);
  std::string peerStatus(const CommHealth* health, int rank);

 private:
  Service();
  ncclResult_t startLocked(const SocketAddress& bindAddr);
  void resetInChild();
  void loop();
  void handleEvents(const std::vector<pollfd>& fds, const std::vector<std::pair<int, uint64_t>>& refs);
  void periodic(int64_t now);
  void dial(Proc& p, int64_t now);
  // Dials every watched process not connected yet and waits (bounded) for the connections.
  void connectNow(int64_t now);
  // Waits (bounded) until p's dial in progress completes.
  void finishDial(Proc& p, int timeoutMs);
  void onDialDone(Proc& p, int err);
  void readIncoming(Proc& p, bool verdictOnClose = true);
  // Reads everything that already arrived (new connections, their HELLOs, every frame) without
  // judging closed connections: a LEAVE may sit there, sent before the exit we are about to judge.
  void drainAll();
  void readPending(Pending& pd, bool* done);
  void handleFrame(const Frame& f, Proc* from);
  void queue(Proc& p, const Frame& f);
  void flush(Proc& p);
  void failProc(Proc& p, PeerFailureKind kind, const std::string& detail, int64_t silentMs);
  void onRecorded(Registration& r, const PeerFailure& f, bool spread);
  Frame frame(FrameKind kind, uint64_t target) const;
  bool watched(uint64_t token) const;
  Registration* findByHealth(const CommHealth* health);
  void wake();

  std::mutex mutex_;
  bool running_ = false;
  int listenFd_ = -1;
  int wakeFd_ = -1;
  SocketAddress listenAddr_;
  uint64_t token_ = 0;
  int pid_ = 0;
  std::string host_;
  int64_t intervalMs_ = 1000;
  int64_t timeoutMs_ = 20000;
  int64_t lastBeatMs_ = 0;
  int64_t lastLoopMs_ = 0;
  std::map<uint64_t, Proc> procs_;
  std::vector<std::unique_ptr<Registration>> regs_;
  std::vector<Pending> pending_;
  std::vector<Departure> departed_;  // bounded: the oldest are dropped
  bool draining_ = false;
};

}  // namespace accl::liveness
