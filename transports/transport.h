// The transport interface: how the memory of one connection (a FIFO region laid out by
// FifoLayout, owned by the receiver) is created on the receiving side, described in a
// fixed-size blob, and reached from the sending side.
//
//   receiver: setupRecv(layout) -> region + blob     (blob travels to the sender over bootstrap)
//   sender:   connectSend(blob) -> region             (then acks, and the receiver may finish())
//
// Every region starts with a RegionHeader that its owner stamps with a random token, which also
// travels in the blob; the sender checks it right after mapping (transports/region_proof.h), so
// memory that is not the peer's region is never used.
//
// Which transport serves a pair is decided by canConnect() in order of preference (p2p first).
// Host backend: p2p = plain memory between threads of one process; shm = a memfd region shared
// between processes of one kernel and one PID namespace. CUDA IPC and the network come later
// behind the same interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "device/common/fifo.h"
#include "nccl.h"

namespace accl {

struct PeerInfo;

// The first bytes of every connection region (the FIFO follows). Written by the owner only.
struct alignas(64) RegionHeader {
  static constexpr uint64_t kMagic = 0x6163636c'72656769ull;  // "acclregi"
  uint64_t magic;
  uint64_t token;      // random per region; the blob carries the same value
  uint64_t bytes;      // the whole region, this header included
  int32_t ownerRank;   // the receiver that created the region
  int32_t peerRank;    // the sender it was made for
  int32_t channel;
  int32_t ownerPid;
};
constexpr size_t kRegionHeaderBytes = sizeof(RegionHeader);
static_assert(kRegionHeaderBytes == 64, "RegionHeader: one cache line, keeps the FIFO 64-byte aligned");

// What the sender needs to reach a receiver's region. Fixed size: it is sent as raw bytes.
struct ConnBlob {
  static constexpr uint32_t kMagic = 0x61636342;  // "accB"
  uint32_t magic;
  uint32_t transport;  // index in transports()
  int32_t ownerPid;
  int32_t ownerRank;
  uint64_t bytes;      // the whole region: kRegionHeaderBytes + layout.totalBytes()
  uint64_t address;    // p2p: the region's address in the owner process
  uint64_t token;      // RegionHeader::token of the region
  uint64_t processToken;  // p2p: random per owner process, proves the address is in this process
  FifoLayout layout;
  char name[64];       // shm: where the sender opens the region (/proc/<pid>/fd/<fd>)
};
static_assert(sizeof(ConnBlob) <= 256, "ConnBlob must fit a bootstrap message");

// A mapped region; releases its memory (free, munmap) when destroyed.
class ConnRegion {
 public:
  virtual ~ConnRegion() = default;
  // The FIFO (after the header).
  void* base() const { return static_cast<char*>(start_) + kRegionHeaderBytes; }
  RegionHeader* header() const { return static_cast<RegionHeader*>(start_); }
  // Called on the receiver once the sender acked: drop names that let others attach.
  virtual void finish() {}
  // Called on the sender when the region failed its proof: release only what this side made
  // (a mapping), never the memory the region points to (it is not known to be the peer's).
  virtual void abandon() {}

 protected:
  void* start_ = nullptr;  // the header
};

struct Transport {
  const char* name;
  bool (*canConnect)(const PeerInfo& self, const PeerInfo& peer);
  // Creates a zeroed region of kRegionHeaderBytes + layout.totalBytes() and fills the blob's
  // transport-specific fields (ownerPid, bytes, address, processToken, name).
  ncclResult_t (*setupRecv)(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob);
  // Maps the region the blob describes. Checks what it can before mapping (the name, type and
  // size of what it opens); the header token is checked by the caller (attachPeerRegion).
  ncclResult_t (*connectSend)(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region);
};

// Built-in host transports, in order of preference.
const Transport* const* hostTransports(int* count);

extern const Transport kHostP2pTransport;
extern const Transport kHostShmTransport;

}  // namespace accl
