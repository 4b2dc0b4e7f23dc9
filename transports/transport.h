// The transport interface: how the memory of one connection (a FIFO region laid out by
// FifoLayout, owned by the receiver) is created on the receiving side, described in a
// fixed-size blob, and reached from the sending side.
//
//   receiver: setupRecv(layout) -> region + blob     (blob travels to the sender over bootstrap)
//   sender:   connectSend(blob) -> region             (then acks, and the receiver may finish())
//
// Which transport serves a pair is decided by canConnect() in order of preference (p2p first).
// Host backend: p2p = plain memory between threads of one process; shm = a memfd region shared
// between processes of one node. CUDA IPC and the network come later behind the same interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "device/common/fifo.h"
#include "nccl.h"

namespace accl {

struct PeerInfo;

// What the sender needs to reach a receiver's region. Fixed size: it is sent as raw bytes.
struct ConnBlob {
  static constexpr uint32_t kMagic = 0x61636342;  // "accB"
  uint32_t magic;
  uint32_t transport;  // index in transports()
  int32_t ownerPid;
  uint32_t reserved;
  uint64_t bytes;
  uint64_t address;   // p2p: the region's address in the owner process
  FifoLayout layout;
  char name[64];      // shm: where the sender opens the region (/proc/<pid>/fd/<fd>)
};
static_assert(sizeof(ConnBlob) <= 256, "ConnBlob must fit a bootstrap message");

// A mapped region; releases its memory (free, munmap) when destroyed.
class ConnRegion {
 public:
  virtual ~ConnRegion() = default;
  void* base() const { return base_; }
  // Called on the receiver once the sender acked: drop names that let others attach.
  virtual void finish() {}

 protected:
  void* base_ = nullptr;
};

struct Transport {
  const char* name;
  bool (*canConnect)(const PeerInfo& self, const PeerInfo& peer);
  ncclResult_t (*setupRecv)(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob);
  ncclResult_t (*connectSend)(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region);
};

// Built-in host transports, in order of preference.
const Transport* const* hostTransports(int* count);

extern const Transport kHostP2pTransport;
extern const Transport kHostShmTransport;

}  // namespace accl
