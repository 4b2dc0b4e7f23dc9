// The transport interface: how the two ends of one connection (one channel, one direction, one
// pair of ranks) get the memory of the FIFO protocol (device/common/fifo.h) and a FifoView over
// it. Every counter lives with the end that waits on it: the receiver owns the slots and `tail`,
// the sender owns `head`, so both ends create something.
//
//   both ends:  setup(side)    -> this end's memory / state + a blob for the peer
//               (the blobs cross over the bootstrap)
//               connect(side)  <- the peer's blob: attach what the peer made, fill the FifoView;
//                                 may return ncclInProgress (called again until done)
//               (each end acks to the other once connected)
//               finish(side)   after the peer's ack: drop names that let others attach (optional)
//               free(side)     when the communicator lets go (destroy, abort, suspend)
//   proxy:      proxyProgress(side) on the communicator's proxy thread, for transports whose
//               Prims' stores do not reach the peer by themselves (the network); null otherwise
//
// A transport may also keep state for a whole communicator (the network: its NetDevice and proxy
// thread). Core never sees what it is: the connection table asks the transport to make it
// (commInit, on the transport's first use), hands it to every setup and connect of that transport
// (ConnSetup::state), lets the transport drain it before the rank leaves (drain), tells it of a
// buffer deregistration (bufferDeregistered), and deletes it after every connection it served. The tuner reads the network's device through two more hooks
// (setNicPicker, nicInfo); every hook is optional.
//
// A blob is ConnBlob: a fixed envelope (which transport, which end, which rank, the receiver's
// FIFO layout) and an opaque payload the transport alone interprets, kConnBlobBytes in all.
// Memory one end maps from the other is proven to be the peer's before first use
// (transports/region_proof.h). The transports and their order of preference are listed in one
// registry (transports/transport.cc); docs/transports.md describes the whole seam and the proxy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "device/common/fifo.h"
#include "nccl.h"
#include "profiler/proxy_op_marks.h"
#include "transports/conn_region.h"
#include "transports/peer_info.h"

struct ncclComm;

namespace accl {

struct Transport;

// Bytes of one connect blob on the wire; the payload is what is left after the envelope.
constexpr size_t kConnBlobBytes = 256;

struct ConnBlob {
  static constexpr uint32_t kMagic = 0x61636342;  // "accB"
  uint32_t magic;
  uint32_t transport;  // index in the registry (transportAt)
  uint32_t side;       // ConnSide of the end that wrote it
  int32_t rank;        // the rank that wrote it
  FifoLayout layout;   // the receiver's FIFO layout (in a sender's blob: the sender's own, unused)
  unsigned char payload[kConnBlobBytes - 16 - sizeof(FifoLayout)];  // the transport's, opaque here
};
static_assert(sizeof(ConnBlob) == kConnBlobBytes, "ConnBlob is sent as raw bytes of a fixed size");

// A transport's own blob content: copied in and out of the payload (no alignment assumed).
template <class T>
void putBlobPayload(ConnBlob* blob, const T& value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(ConnBlob::payload),
                "a transport's blob must be plain bytes that fit ConnBlob::payload");
  std::memcpy(blob->payload, &value, sizeof(T));
}
template <class T>
T blobPayload(const ConnBlob& blob) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(ConnBlob::payload),
                "a transport's blob must be plain bytes that fit ConnBlob::payload");
  T value;
  std::memcpy(&value, blob.payload, sizeof(T));
  return value;
}

// What a transport keeps for one end of a connection (regions, sockets, requests). Deleted by
// the transport's free().
struct TransportResources {
  virtual ~TransportResources() = default;
};

// One end of one connection, as setup / connect / free see it. Its address is stable from setup
// to free, so a transport may hand it to its communicator's proxy at setup (ConnSetup::comm)
// and take it back in free.
struct ConnEnd {
  const Transport* transport = nullptr;
  ConnSide side = ConnSide::kSend;
  FifoView view;                                  // complete once connect() succeeded
  std::unique_ptr<TransportResources> resources;  // the transport's state for this end
  uint64_t ownedBytes = 0;   // memory this end allocated for the connection
  uint64_t mappedBytes = 0;  // the peer's memory this end maps
  // A sender end whose proxy can send straight from this process's memory (the network on the
  // host backend): Simple steps of at least this many bytes may be published as
  // kFifoStepUserPtr (device/common/fifo.h). 0: never.
  size_t userSendMinBytes = 0;
  // With userSendMinBytes: the device sends only from memory registered with it (IB verbs,
  // plugins), so only a step inside a buffer registered with ncclCommRegister goes that way.
  bool userSendRegisteredOnly = false;
  // A receiver end whose proxy can receive straight into this process's memory (the network on
  // the host backend): kFifoSteps landings (device/common/fifo.h FifoLanding) where the Prims may ask
  // for a Simple step of at least landMinBytes to land in the user's buffer. Null: never.
  FifoLanding* landings = nullptr;
  size_t landMinBytes = 0;
  // With landings: the device writes only registered memory (IB verbs, plugins), so only a step
  // inside a buffer registered with ncclCommRegister may land.
  bool landRegisteredOnly = false;
  // With a profiler plugin: the operations the backend ran on this end, for a proxy's ProxyOp /
  // ProxyStep events (profiler/proxy_op_marks.h). Untouched without one.
  prof::ProxyOpMarks profOps;
};

// What one transport keeps for one communicator, opaque to everyone else (the network's: its
// NetContext). Made by Transport::commInit, owned by the connection table, deleted after every
// connection of the communicator has been freed; the destructor is the transport's last word
// (the network stops its proxy thread there).
struct TransportCommState {
  virtual ~TransportCommState() = default;
};

// What a transport may know of its communicator when it makes its state. Plain values, since
// transports sit below core (docs/layers.md) and never see ncclComm.
struct TransportCommInit {
  int rank = -1;
  uint64_t commHash = 0;   // network plugins (v11+) key their per-communicator context by it
  std::string netName;     // NCCL_NET / ncclConfig_t.netName; "" = the first usable network
  int trafficClass = -1;   // ncclConfig_t.trafficClass; -1 = undefined
  // Where a link that fails outside a close is reported (from the proxy thread): the
  // communicator's liveness service, which names the peer in every rank's error. Empty: nowhere.
  std::function<void(int peerRank, const std::string& detail)> linkLost;
  // The communicator's profiler plugin context (null: none), for a proxy's events.
  prof::CommProfiler* profiler = nullptr;
};

// One device of a network, as the tuner sees it.
struct TransportNic {
  std::string name;     // e.g. "eth0", "mlx5_0:1"
  std::string pciPath;  // sysfs path of the device, "" when unknown
  int speedMbps = 0;
  float latencyUs = 0;
};
// Picks the device a communicator uses among its network's devices: an index into `nics`, or -1
// for device 0.
using TransportNicPicker = std::function<int(const std::vector<TransportNic>& nics)>;

// Who and what a connection is, for setup and connect.
struct ConnSetup {
  ncclComm* comm = nullptr;  // the communicator (null in transport unit tests)
  const PeerInfo* self = nullptr;
  const PeerInfo* peer = nullptr;
  int channel = 0;
  // The FIFO layout: at setup, this rank's (what its receiving ends create); at the sender's
  // connect, the receiver's (from its blob), which the sender's view must follow.
  FifoLayout layout{};
  // This transport's state for the communicator (Transport::commInit), owned by the connection
  // table; null for a transport without commInit and in transport unit tests.
  TransportCommState* state = nullptr;
};

// The functions of one end of a transport. setup and connect report errors with accl::fail,
// naming both ranks; none of them blocks for long (connect returns ncclInProgress instead).
struct TransportSide {
  ncclResult_t (*setup)(const ConnSetup& s, ConnEnd* end, ConnBlob* blob);
  ncclResult_t (*connect)(const ConnSetup& s, const ConnBlob& peerBlob, ConnEnd* end);
  void (*finish)(ConnEnd* end);  // optional (null: nothing to do)
  void (*free)(ConnEnd* end);    // releases resources; the view must not be used afterwards
  // Moves this end's data that the Prims' stores do not carry to the peer by themselves, without
  // blocking; *progressed says whether anything moved. Optional (null: p2p, shm).
  ncclResult_t (*proxyProgress)(ConnEnd* end, bool* progressed);
};

struct Transport {
  const char* name;
  // Symmetric: both ends compute the same answer from the same two PeerInfos.
  bool (*canConnect)(const PeerInfo& self, const PeerInfo& peer);
  TransportSide send;
  TransportSide recv;

  // Per-communicator hooks, each optional (null: the transport keeps nothing per communicator).
  // Makes the transport's state for a communicator; called once, before its first connection of
  // this transport (or the tuner's first question).
  std::unique_ptr<TransportCommState> (*commInit)(const TransportCommInit& init) = nullptr;
  // Lets what the ends already published reach the peers (bounded), then stops whatever
  // progresses the ends; frees nothing. Called before the rank tells its peers it left, and
  // again before its connections are freed (destroy, abort, suspend).
  void (*drain)(TransportCommState* state) = nullptr;
  // The network's devices, for the tuner: setNicPicker chooses which device the communicator
  // uses when there are several (effective only before the device is opened: call it first);
  // nicInfo opens the device if needed and describes it (an error when no network is usable).
  void (*setNicPicker)(TransportCommState* state, TransportNicPicker picker) = nullptr;
  ncclResult_t (*nicInfo)(TransportCommState* state, TransportNic* out) = nullptr;
  // ncclCommDeregister took back the buffer registration `id` (UserBufferReg::id): whatever the
  // transport registered for it (the network: its device's memory registrations for zero-copy
  // sends) is released before the call returns, while the memory is still the user's.
  void (*bufferDeregistered)(TransportCommState* state, uint64_t id) = nullptr;

  const TransportSide& side(ConnSide s) const { return s == ConnSide::kSend ? send : recv; }
};

// The registry (transports/transport.cc): every transport, in order of preference. The index of
// a transport is the same on every rank of one build and travels in ConnBlob::transport.
int transportCount();
const Transport* transportAt(int index);
// The index of the first transport that can serve `self` and `peer`, or -1.
int pickTransport(const PeerInfo& self, const PeerInfo& peer);

// The transports the registry lists.
extern const Transport kHostP2pTransport;  // transports/p2p: threads of one process
extern const Transport kHostShmTransport;  // transports/shm: processes of one kernel and PID namespace
extern const Transport kNetTransport;      // transports/net: different hosts (or p2p and shm disabled)
#ifdef ACCL_HAVE_CUDA
extern const Transport kCudaP2pTransport;  // transports/p2p: GPU ranks of one machine with a P2P path
extern const Transport kCudaShmTransport;  // transports/shm: GPU ranks of one machine without one
#endif

}  // namespace accl
