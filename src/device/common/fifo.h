// The connection protocol shared by both backends and every transport: one connection carries
// data from one sender to one receiver on one channel, through a ring of kFifoSteps slots per
// protocol that lives in the receiver's memory, plus two step counters.
//
//   sender                                   receiver
//   wait  step - head < kFifoSteps           wait  data for `step` visible (Simple: tail > step,
//   write slot[step % kFifoSteps]                  LL: every line's flag == step + 1)
//   Simple: publish tail = step + 1          read / reduce slot[step % kFifoSteps]
//   step++                                   publish head = step + 1; step++
//
// Simple moves a chunk with plain stores and publishes it with one release store of `tail`.
// LL (low latency) interleaves a 32-bit flag with every 32 bits of data in 8-byte words that are
// written and read as one atomic unit, so the receiver needs no separate tail and no fence: a
// line whose flag equals step + 1 is complete. LL halves the bandwidth, so it wins for small
// messages only. (LL128 is a CUDA-only variant with 120 data bytes per 128-byte line.)
//
// Counters only grow; both ends keep their own `step` across operations, so a connection is
// reused by every collective of the communicator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/host_device.h"

namespace accl {

constexpr int kFifoSteps = 8;

// Control words of one connection. Each counter sits on its own cache line: the sender writes
// tail and reads head, the receiver the opposite. The sleeper counts let a waiter that gave up
// spinning be woken (host: futex) instead of polled.
struct alignas(64) FifoCtrl {
  alignas(64) uint64_t tail;           // Simple: steps published by the sender
  uint32_t tailSleepers;               // receivers blocked waiting for tail/LL flags
  alignas(64) uint64_t head;           // steps released by the receiver
  uint32_t headSleepers;               // senders blocked waiting for a free slot
  alignas(64) uint32_t closed;         // set by either end when its communicator goes away
  uint32_t refs;                       // in-process regions: ends still holding the memory
};
static_assert(sizeof(FifoCtrl) == 192, "FifoCtrl: three cache lines");

// One LL word: 4 data bytes and the 4-byte flag of the step that wrote them. A 16-byte LL line
// is two of these; we treat each 8-byte word independently, which keeps the host atomic width
// at 8 bytes.
struct LLWord {
  uint32_t data;
  uint32_t flag;
};
static_assert(sizeof(LLWord) == 8, "LLWord is one 8-byte atomic unit");

constexpr size_t kLLWordPayload = sizeof(uint32_t);

// Layout of a connection's memory region: [FifoCtrl][Simple slots][LL slots]. Offsets are
// relative to the region start, so a region mapped at different addresses in two processes
// describes itself identically.
struct FifoLayout {
  size_t simpleSlotBytes;  // bytes of one Simple slot (NCCL_BUFFSIZE / kFifoSteps)
  size_t llSlotWords;      // LL words of one LL slot (NCCL_LL_BUFFSIZE / kFifoSteps / 8)

  ACCL_HOST_DEVICE size_t simpleOffset() const { return sizeof(FifoCtrl); }
  ACCL_HOST_DEVICE size_t llOffset() const { return simpleOffset() + simpleSlotBytes * kFifoSteps; }
  ACCL_HOST_DEVICE size_t totalBytes() const { return llOffset() + llSlotWords * sizeof(LLWord) * kFifoSteps; }
  // Payload bytes one LL slot carries.
  ACCL_HOST_DEVICE size_t llSlotPayload() const { return llSlotWords * kLLWordPayload; }
};

// A mapped connection as one end sees it. Both ends hold one; `step` is that end's counter.
struct FifoView {
  FifoCtrl* ctrl = nullptr;
  char* simple = nullptr;   // kFifoSteps slots of layout.simpleSlotBytes
  LLWord* ll = nullptr;     // kFifoSteps slots of layout.llSlotWords
  FifoLayout layout{};
  uint64_t step = 0;
  // Sender only: the last head value read. A free slot is known without touching the receiver's
  // cache line until the sender gets kFifoSteps ahead of it.
  uint64_t headCache = 0;

  ACCL_HOST_DEVICE char* simpleSlot(uint64_t s) const {
    return simple + (s % kFifoSteps) * layout.simpleSlotBytes;
  }
  ACCL_HOST_DEVICE LLWord* llSlot(uint64_t s) const { return ll + (s % kFifoSteps) * layout.llSlotWords; }
};

// Builds a view over a region laid out by `layout` that starts at `base`.
inline FifoView makeFifoView(void* base, const FifoLayout& layout) {
  FifoView v;
  char* b = static_cast<char*>(base);
  v.ctrl = reinterpret_cast<FifoCtrl*>(b);
  v.simple = b + layout.simpleOffset();
  v.ll = reinterpret_cast<LLWord*>(b + layout.llOffset());
  v.layout = layout;
  return v;
}

}  // namespace accl
