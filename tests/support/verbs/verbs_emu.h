// Internal state of the userspace verbs emulator (libaccl-verbs-emu.so): the objects behind the
// libibverbs handles it hands out, the wire format between emulated QPs, and the functions the
// three parts share (objects and exported entry points: verbs_emu_objects.cc; the data path:
// verbs_emu_datapath.cc; the per-device network thread: verbs_emu_engine.cc; faults:
// verbs_emu_fault.cc).
//
// Model: each emulated device is bound to an IPv4 interface; its GID 1 is that address
// IPv4-mapped (GID 0 a link-local one, as RoCE NICs list them). Every QP owns a TCP listener on
// that address and its QP number is the listener's port, so (GID, QPN) is a reachable address.
// A requester QP carries its RDMA writes and sends over one TCP connection to the responder
// QP's listener; the responder checks rkeys against its process's MRs, places the bytes,
// produces receive completions and acknowledges each request; the requester completes a
// work request when its acknowledgement arrives. No acknowledgement within the retry budget
// (NCCL_IB_TIMEOUT/RETRY_CNT-style, scaled) means IBV_WC_RETRY_EXC_ERR: a cut link behaves like
// a pulled cable.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace verbs_emu {

int64_t nowNs();

struct Device {
  ibv_device dev;  // first: the handle is &dev
  std::string ifname;
  in_addr ip;
  int index = 0;
};

struct Context;

struct Pd {
  ibv_pd pd;  // first
  Context* ctx = nullptr;
};

struct Mr {
  ibv_mr mr;  // first
  Pd* pd = nullptr;
  int access = 0;
};

struct Cqe {
  ibv_wc wc;
  int64_t readyNs;
};

struct Cq {
  ibv_cq cq;  // first
  Context* ctx = nullptr;
  int depth = 0;
  int users = 0;  // QPs that use it
  std::deque<Cqe> entries;
  bool overflowWarned = false;
};

// --- Wire format (host byte order: both ends run on this machine) ---
constexpr uint32_t kWireMagic = 0x56454d55;  // "VEMU"
enum WireType : uint16_t { kWireHello = 1, kWireData = 2, kWireAck = 3, kWireRnr = 4 };
enum WireStatus : uint16_t { kAckOk = 0, kAckRemAccess = 1, kAckRemInvReq = 2, kAckRemOp = 3 };
struct WireHdr {
  uint32_t magic;
  uint16_t type;
  uint16_t status;   // acks
  uint32_t opcode;   // data: ibv_wr_opcode
  uint32_t rkey;
  uint32_t imm;      // network byte order, as in the work request
  uint32_t flags;
  uint64_t seq;      // data / ack: request sequence; hello: destination QPN
  uint64_t raddr;    // data: remote address; hello: source QPN
  uint64_t len;      // payload bytes that follow (hello: 16, the source GID)
};
constexpr uint64_t kMaxFrameBytes = uint64_t(1) << 32;

// A TCP connection with framed output and a frame being read.
struct Conn {
  int fd = -1;
  bool connecting = false;  // non-blocking connect in progress
  std::deque<std::vector<char>> out;
  size_t outOff = 0;  // bytes of out.front() already written
  WireHdr hdr{};
  size_t hdrGot = 0;
  std::vector<char> payload;
  size_t payloadGot = 0;
  void close();
  bool hasOutput() const { return !out.empty(); }
};

struct PendingSend {
  uint64_t seq;
  uint64_t wrId;
  ibv_wc_opcode opcode;
  bool signaled;
  uint32_t len;
};

struct PostedRecv {
  uint64_t wrId;
  std::vector<ibv_sge> sges;
};

struct InFrame {
  WireHdr hdr;
  std::vector<char> payload;
};

struct Qp {
  ibv_qp qp;  // first
  Context* ctx = nullptr;
  Pd* pd = nullptr;
  Cq* sendCq = nullptr;
  Cq* recvCq = nullptr;
  ibv_qp_cap cap{};
  bool sigAll = false;
  bool dead = false;  // destroyed; the engine drops it
  ibv_qp_state state = IBV_QPS_RESET;
  int accessFlags = 0;
  // RTR / RTS attributes.
  uint32_t destQpn = 0;
  ibv_gid dgid{};
  in_addr destIp{};
  bool destIpValid = false;
  int timeout = 14, retryCnt = 7;
  int listenFd = -1;
  // Requester side.
  Conn out;
  bool outBroken = false;
  int64_t nextConnectNs = 0;
  std::deque<PendingSend> unacked;
  size_t queuedSends = 0;  // posted, not yet completed (unacked.size())
  uint64_t nextSeq = 1;
  int64_t retryDeadlineNs = 0;
  // Responder side.
  Conn in;
  bool inHelloOk = false;
  Conn pendingIn;  // a newer connection while `in` is established: replaces it only with a valid hello
  std::deque<InFrame> inQueue;
  std::deque<PostedRecv> recvs;
  int64_t lastRnrNs = 0;
  ~Qp();
};

struct Context {
  ibv_context ctx;  // first
  Device* dev = nullptr;
  std::mutex mu;
  std::vector<std::shared_ptr<Qp>> qps;
  std::thread engine;
  std::atomic<bool> stop{false};
  int wakeFd = -1;
  void wake();
};

// --- Shared functions (callers hold ctx->mu unless noted) ---
// Adds a completion (faults may drop or delay it).
void pushCqe(Cq* cq, const ibv_wc& wc);
// Moves a QP to the error state: every outstanding send and posted receive completes with
// IBV_WC_WR_FLUSH_ERR; connections are closed.
void moveToError(Qp* qp);
// The requester's retry budget for this QP, in nanoseconds.
int64_t retryBudgetNs(const Qp* qp);
// Writes as much queued output as the socket takes now; false when the connection failed.
bool flushOut(Conn* c);
// Starts the outbound connection when needed.
void startConnect(Qp* qp);
// Handles the responder's queued inbound frames (stops at one that waits for a receive).
void processInbound(Qp* qp);
// Handles an acknowledgement / RNR frame on the requester side.
void handleAck(Qp* qp, const WireHdr& h);
// Fails the oldest outstanding send with `status` and flushes the rest (QP to error).
void failSends(Qp* qp, ibv_wc_status status);
// Queues a frame for sending on `c`.
void queueFrame(Conn* c, const WireHdr& h, const void* payload, size_t len);

// MR lookup by key (process-wide, locks its own mutex); the callback runs with the MR table
// locked so the region cannot be deregistered meanwhile. Returns false when no MR matches.
bool withRemoteMr(uint32_t rkey, Pd* pd, uint64_t addr, uint64_t len, int needAccess,
                  void (*fn)(void* dst, const void* src, size_t len), const void* src);
bool withLocalMr(uint32_t lkey, Pd* pd, uint64_t addr, uint64_t len, int needAccess);
// Copies in ascending address order in small steps, the way a NIC's DMA writes land, so a
// reader polling the last word of a record sees the record's earlier words first.
void forwardCopy(void* dst, const void* src, size_t len);

// The engine thread of a context.
void engineMain(Context* ctx);

// --- Faults (verbs_emu_fault.cc): process-wide, thread-safe ---
struct FaultDecision {
  bool qpError = false;      // this send moves its QP to error
  bool rkeyMismatch = false; // this RDMA write carries a wrong rkey
};
FaultDecision faultOnPostSend(bool isRdmaWriteWithData);
bool faultDropCqe();
int faultDelayCqMs();
void faultPollFile();  // re-reads ACCL_VERBS_EMU_FAULT_FILE when it changed
void faultSet(const char* spec);

}  // namespace verbs_emu
