// One end of a connection as a CUDA Prims block sees it: the FIFO protocol of
// device/common/fifo.h reduced to raw pointers valid in the kernel's address space (device
// memory, a peer's memory mapped through CUDA IPC, or pinned host memory). Counters live with
// the end that waits on them: the slots and `tail` in the receiver's memory, `head` in the
// sender's. `tail` and `head` point at the counter's value (FifoCounter::value).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/fifo.h"
#include "device/common/ids.h"
#include "device/simt/simt.h"

namespace accl {

// LL128 slots: lines of 128 bytes (120 data bytes + flag word), written in groups of
// simt::kLL128LinesPerWarp by one warp.
constexpr size_t kLL128LineDataBytes = simt::kLL128LineDataBytes;

struct PrimsConn {
  uint64_t* tail = nullptr;   // receiver's memory: steps published by the sender
  uint64_t* head = nullptr;   // sender's memory: steps released by the receiver
  char* simple = nullptr;     // receiver's memory: kFifoSteps slots of simpleSlotBytes (16-byte aligned)
  uint64_t* ll = nullptr;     // receiver's memory: kFifoSteps slots of llSlotWords LL words
  uint64_t* ll128 = nullptr;  // receiver's memory: kFifoSteps slots of ll128SlotLines lines (128-byte aligned)
  // Receiver's memory, on tail's line (FifoCounter::stepInfo): what each slot holds
  // (fifoStepInfo), written by the sender's posting lane before it publishes tail, for a proxy
  // that forwards the step (the network). Null: not written.
  uint32_t* stepInfo = nullptr;
  size_t simpleSlotBytes = 0;  // a multiple of 16
  size_t llSlotWords = 0;      // even (16-byte LL lines)
  size_t ll128SlotLines = 0;   // a multiple of simt::kLL128LinesPerWarp
  uint64_t step = 0;           // this end's step counter, kept across operations

  // Protocol `p`'s slot area, and the bytes from one of its slots to the next: step s's slot
  // starts at slotsOf(p) + (s % kFifoSteps) * slotStrideOf(p) (CudaPrims reads both once).
  ACCL_HOST_DEVICE char* slotsOf(ProtoId p) const {
    return p == kProtoLL ? reinterpret_cast<char*>(ll) : p == kProtoLL128 ? reinterpret_cast<char*>(ll128) : simple;
  }
  ACCL_HOST_DEVICE uint32_t slotStrideOf(ProtoId p) const {
    const size_t bytes = p == kProtoLL      ? llSlotWords * sizeof(uint64_t)
                         : p == kProtoLL128 ? ll128SlotLines * simt::kLL128LineBytes
                                            : simpleSlotBytes;
    return static_cast<uint32_t>(bytes);
  }
};

static_assert(FifoLayout::kLL128LineBytes == simt::kLL128LineBytes, "the FIFO's LL128 lines are the layer's");

// NCCL's default LL128 FIFO per connection (NCCL_LL128_BUFFSIZE): 120 data words per thread of
// 640 threads, 8 steps of 8-byte words.
constexpr size_t kDefaultLL128BuffBytes = size_t(120) * 640 * kFifoSteps * sizeof(uint64_t);

// LL128 lines per slot for a FIFO of `buffBytes` (NCCL_LL128_BUFFSIZE; <= 0: NCCL's default):
// whole warp groups of lines, at least one group.
inline size_t ll128SlotLinesFor(int64_t buffBytes) {
  const size_t bytes = buffBytes > 0 ? size_t(buffBytes) : kDefaultLL128BuffBytes;
  const size_t lines = bytes / kFifoSteps / simt::kLL128LineBytes / simt::kLL128LinesPerWarp * simt::kLL128LinesPerWarp;
  return lines > 0 ? lines : simt::kLL128LinesPerWarp;
}

// The end a FifoView (device/common/fifo.h) describes, with `step` copied. LL128 slots come from
// the layout (FifoLayout::ll128SlotLines; 0 on the host backend, then ll128 stays null and the
// CUDA backend must not pick LL128 on that connection).
inline PrimsConn primsConnFrom(const FifoView& v) {
  PrimsConn c;
  c.tail = &v.tail->value;
  c.head = &v.head->value;
  c.simple = v.simple;
  c.ll = reinterpret_cast<uint64_t*>(v.ll);
  c.ll128 = v.ll128;
  c.stepInfo = v.tail->stepInfo;
  c.simpleSlotBytes = v.layout.simpleSlotBytes;
  c.llSlotWords = v.layout.llSlotWords;
  c.ll128SlotLines = v.ll128 ? v.layout.ll128SlotLines : 0;
  c.step = v.step;
  return c;
}

// Largest element count one step of `proto` carries through a connection with these slots
// (elements of `elemSize` bytes; at least 1). LL moves 8 data bytes per 16-byte line; LL128
// moves 120 bytes per line and writes whole groups of lines.
ACCL_HOST_DEVICE inline size_t primsChunkCapacity(const PrimsConn& c, ProtoId proto, size_t elemSize) {
  size_t bytes;
  if (proto == kProtoLL) bytes = c.llSlotWords / 2 * 8;
  else if (proto == kProtoLL128) bytes = c.ll128SlotLines * kLL128LineDataBytes;
  else bytes = c.simpleSlotBytes;
  size_t elems = bytes / elemSize;
  return elems > 0 ? elems : 1;
}

}  // namespace accl
