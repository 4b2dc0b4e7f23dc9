// Connection regions: memory that one end of a connection creates and the other end maps (the
// p2p and shm transports; a network transport's local staging memory may use them too). Every
// region starts with a RegionHeader that its owner stamps (transports/region_proof.h); the FIFO
// memory of FifoLayout follows it, so FIFO offsets stay relative to ConnRegion::base().
#pragma once

#include <cstddef>
#include <cstdint>

namespace accl {

// Which end of a connection made something (a region, a blob).
enum class ConnSide : uint32_t { kSend = 1, kRecv = 2 };

inline const char* connSideName(ConnSide side) { return side == ConnSide::kSend ? "sender" : "receiver"; }

// The first bytes of every connection region. Written by the owner only.
struct alignas(64) RegionHeader {
  static constexpr uint64_t kMagic = 0x6163636c'72656769ull;  // "acclregi"
  uint64_t magic;
  uint64_t token;      // random per region; the owner's blob carries the same value
  uint64_t bytes;      // the whole region, this header included
  int32_t ownerRank;   // the rank that created the region
  int32_t peerRank;    // the rank it was made for
  int32_t channel;
  int32_t ownerPid;
  uint32_t side;       // ConnSide of the owner's end
  uint32_t reserved;
};
constexpr size_t kRegionHeaderBytes = sizeof(RegionHeader);
static_assert(kRegionHeaderBytes == 64, "RegionHeader: one cache line, keeps the FIFO 64-byte aligned");

// What the peer needs to prove a region it mapped is the owner's: travels inside the owner's
// connect blob (first in the payload of every mapped-region transport, transports/mapped_ends.h).
struct RegionRef {
  uint64_t token;     // RegionHeader::token
  uint64_t bytes;     // RegionHeader::bytes
  int32_t ownerRank;
  int32_t ownerPid;
  uint32_t side;      // ConnSide of the owner's end
  uint32_t reserved;
};

// A created or mapped region; releases its memory (free, munmap) when destroyed.
class ConnRegion {
 public:
  virtual ~ConnRegion() = default;
  // The FIFO memory (after the header).
  void* base() const { return static_cast<char*>(start_) + kRegionHeaderBytes; }
  RegionHeader* header() const { return static_cast<RegionHeader*>(start_); }
  // Called on the owner once the peer has attached: drop names that let others attach.
  virtual void finish() {}
  // Called on the attaching side when the region failed its proof: release only what this side
  // made (a mapping), never the memory the region points to (it is not known to be the peer's).
  virtual void abandon() {}

 protected:
  void* start_ = nullptr;  // the header
};

}  // namespace accl
