// The state of one end of a network connection (transports/net/net_transport.cc): its memory —
// all of it local, the FifoView never points anywhere else — its NetDevice comm and
// registration, and the proxy's progress through the steps.
//
// The memory is host memory; for a CUDA rank it is pinned and mapped into the device, so the
// kernel's Prims and the proxy share it (docs/transports.md §6).
//
// Receiver memory: [tail counter][Simple slots][LL slots] (fifo.h's receiver layout), then the
// local copy of head that the receiver's Prims release into, the LL bounce slots and the step
// headers that arrive. Sender memory: the staging FIFO in the receiver's layout (the Prims write
// there as if it were the peer's), then the head counter the proxy publishes into and the step
// headers that leave.
//
// On the wire every step is a NetStepHeader (its step number and fifo.h step info: bytes and
// protocol) followed, when it carries bytes, by the slot's bytes: the receiving proxy learns from
// the header where the payload goes (the Simple slot, or an LL bounce slot that is copied into
// the LL slot with 8-byte atomic stores) before it posts the payload's receive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/common/fifo.h"
#include "profiler/net_plugin_events.h"
#include "transports/net/net_device.h"
#include "transports/transport.h"

namespace accl {

class NetContext;

struct NetStepHeader {
  uint32_t info;  // fifo.h step info: slot bytes | kFifoStepLL
  uint32_t step;  // low half of the step number (checked by the receiver)
};

// What the receiver's blob carries to the sender.
struct NetBlob {
  static constexpr uint32_t kMagic = 0x6e657462;  // "netb"
  uint32_t magic;
  int32_t dev;
  NetHandle handle;
};

// The header a sender sends last, when its communicator lets go of the connection after
// everything published was sent: the receiver stops posting receives (so the closing socket is
// no error) and closes its end once the steps before it have landed.
constexpr uint32_t kNetGoodbyeInfo = 0xffffffffu;

constexpr int kNetHeaderTag = 0x6864;
constexpr int kNetDataTag = 0x6474;

struct NetConnResources : TransportResources {
  ~NetConnResources() override;

  NetContext* ctx = nullptr;
  NetDevice* net = nullptr;
  ConnSide side = ConnSide::kSend;
  int rank = -1;
  int peerRank = -1;
  int channel = 0;
  std::string peerHost;
  FifoLayout layout{};

  // Memory (one allocation, registered once). On a rank whose backend runs kernels
  // (PeerInfo::gpuFifos) it is pinned host memory mapped into the device (`pinned`), and the
  // FifoView holds its device addresses (`memDevice`); else plain host memory (memDevice == mem).
  // The proxy always works on the host addresses.
  char* mem = nullptr;
  char* memDevice = nullptr;
  size_t memBytes = 0;
  bool pinned = false;
  int cudaDev = -1;
  char* fifo = nullptr;            // receiver layout: tail, Simple slots, LL slots
  FifoCounter* head = nullptr;     // sender: published by the proxy; receiver: the Prims' releases
  LLWord* bounce = nullptr;        // receiver: kFifoSteps LL slots the network fills
  NetStepHeader* headers = nullptr;  // kFifoSteps

  NetListenComm* listenComm = nullptr;
  NetSendComm* sendComm = nullptr;
  NetRecvComm* recvComm = nullptr;
  NetMemHandle* mhandle = nullptr;
  bool inProxy = false;
  bool testInOrder = false;  // the comm's requests are tested oldest first (net_drive_order.h)
  bool failed = false;
  bool closing = false;          // sender: send the goodbye once everything published is sent
  NetRequest* byeReq = nullptr;  // sender: the goodbye in flight
  bool byeDone = false;          // sender: the goodbye was sent
  bool peerLeft = false;         // receiver: the goodbye arrived
  bool closedLocally = false;    // receiver: counters closed after the goodbye
  // Sender: the smallest step its Prims may publish as a user pointer (net_user_send.h; 0: none),
  // and the steps and bytes sent that way.
  size_t userSendMinBytes = 0;
  uint64_t userSteps = 0;
  uint64_t userBytes = 0;
  // A device that sends only from registered memory (IB verbs, plugins): the user buffers
  // (ncclCommRegister'd, by registration id) this end registered with it for zero-copy sends or
  // (receiver) landings, each kept until ncclCommDeregister or the end goes (net_user_send.h).
  bool userSendRegisteredOnly = false;
  struct UserMr {
    uint64_t id;
    const void* base;
    size_t bytes;
    NetMemHandle* mhandle;
  };
  std::vector<UserMr> userMrs;
  // Receiver: the landing table its Prims fills (net_landing.h; null: no landings), the smallest
  // step that may land, how many landings the proxy holds claimed, and the steps and bytes that
  // landed.
  std::unique_ptr<FifoLanding[]> landings;
  size_t landMinBytes = 0;
  bool landRegisteredOnly = false;  // only inside ncclCommRegister'd buffers (IB verbs, plugins)
  int claimedLandings = 0;
  uint64_t landedSteps = 0;
  uint64_t landedBytes = 0;

  // Sender progress: steps [doneStep, postStep) are posted; postStep's header may be.
  // Receiver progress: steps [doneStep, postStep) have their payload posted (or none);
  // postStep's header is posted (hdrReq) or received (hdrReady).
  uint64_t postStep = 0;
  uint64_t doneStep = 0;
  bool hdrPosted = false;
  NetRequest* hdrReq = nullptr;
  bool hdrReady = false;
  struct Step {
    NetRequest* hdr = nullptr;
    NetRequest* data = nullptr;
    uint32_t info = 0;
    bool complete = false;
    bool landed = false;  // receiver: posted into the user's buffer (a claimed landing)
    void* profEvent = nullptr;  // its ProxyStep event (null: none)
  } steps[kFifoSteps];

  // Profiler (null: none): the communicator's context and the backend's marks of the operations
  // on this end (ConnEnd::profOps), which parent the ProxyStep events (net_profile.cc); when the
  // plugin wants NetPlugin events, one parent per step slot for the device's own events (the
  // requests' profiler handle, profiler/net_plugin_events.h), else none.
  prof::CommProfiler* prof = nullptr;
  prof::ProxyOpMarks* profOps = nullptr;
  std::unique_ptr<prof::NetStepParent[]> profParents;

  // The address of this end's memory at `p` (a host address in mem) as the Prims use it.
  void* forPrims(void* p) const { return memDevice + (static_cast<char*>(p) - mem); }
  size_t llSlotBytes() const { return layout.llSlotWords * sizeof(LLWord); }
  FifoCounter* tail() const { return reinterpret_cast<FifoCounter*>(fifo + FifoLayout::tailOffset()); }
  char* simpleSlot(uint64_t s) const { return fifo + layout.simpleOffset() + (s % kFifoSteps) * layout.simpleSlotBytes; }
  char* llSlot(uint64_t s) const { return fifo + layout.llOffset() + (s % kFifoSteps) * llSlotBytes(); }
  char* bounceSlot(uint64_t s) const { return reinterpret_cast<char*>(bounce) + (s % kFifoSteps) * llSlotBytes(); }

  // Marks the connection failed: both local counters closed (a waiting Prims wakes), the error
  // logged once with both ranks and the peer's host (a WARN, or INFO while closing). Returns `res`.
  ncclResult_t failWith(ncclResult_t res, const char* what);
  // Sets `closed` on both local counters and wakes their sleepers.
  void closeCounters();
  // Frees the memory (pinned or not).
  void releaseMemory();
};

// ProxyStep events (net_profile.cc), each a no-op without a profiler: a step of this end is about
// to be posted to the device (`bytes` of payload; its operation's ProxyOp parents it; called
// again while the device refuses its requests, it starts the event once) and returns the profiler
// handle its requests carry (null: none); the step is complete (the operations whose steps are
// all complete get their ProxyOp stopped). Teardown stops whatever is still open.
void* netProfileStepBegin(NetConnResources* r, uint64_t step, size_t bytes);
void netProfileStepDone(NetConnResources* r, uint64_t step);
void netProfileRetireAll(NetConnResources* r);

// Proxy progress of each end (net_send_progress.cc, net_recv_progress.cc).
ncclResult_t netSendProgress(NetConnResources* r, bool* progressed);
ncclResult_t netRecvProgress(NetConnResources* r, bool* progressed);

}  // namespace accl
