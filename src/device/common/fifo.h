// The connection protocol shared by both backends and every transport: one connection carries
// data from one sender to one receiver on one channel, through a ring of kFifoSteps slots per
// protocol plus two step counters.
//
//   sender                                   receiver
//   wait  step - head < kFifoSteps           wait  data for `step` visible (Simple: tail > step,
//   write slot[step % kFifoSteps]                  LL: every line's flag == step + 1)
//   publish tail = step + 1                  read / reduce slot[step % kFifoSteps]
//   step++                                   publish head = step + 1; step++
//
// Every counter lives with the end that waits on it: the slots and `tail` in the receiver's
// memory (the sender writes them), `head` in the sender's memory (the receiver writes it). So
// every wait polls local memory, and a transport that cannot store into the peer's memory (the
// network) keeps a copy of each counter on each side and lets a proxy publish it locally.
//
// Simple moves a chunk with plain stores and publishes it with one release store of `tail`.
// LL (low latency) interleaves a 32-bit flag with every 32 bits of data in 8-byte words that are
// written and read as one atomic unit, so the receiver needs no separate tail and no fence: a
// line whose flag equals step + 1 is complete (the sender still bumps tail, so that a receiver
// may sleep on it). LL halves the bandwidth, so it wins for small messages only. (LL128 is a
// CUDA-only variant with 120 data bytes per 128-byte line; the host maps it to Simple.)
//
// Counters only grow; both ends keep their own `step` across operations, so a connection is
// reused by every collective of the communicator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/host_device.h"

namespace accl {

constexpr int kFifoSteps = 8;

// One step counter with what its waiter needs, on its own cache line in the waiter's memory.
// `sleepers` counts waiters that gave up spinning and sleep (host: futex on the low half of
// `value`); the writer wakes them after publishing. `closed` is set by either end when its
// communicator goes away (each end marks both counters it can reach), so a waiter learns it
// from the line it already polls.
struct alignas(64) FifoCounter {
  uint64_t value;     // tail: steps published by the sender; head: steps released by the receiver
  uint32_t sleepers;  // waiters sleeping on value
  uint32_t closed;    // nonzero: one end has closed the connection
  // Tail only: what the sender put in each slot (fifoStepInfo), written before it publishes tail,
  // for a transport whose proxy forwards the step (the network); on a network receiver's tail the
  // proxy writes it, with kFifoStepLanded for a step received into the user's buffer. Unused on
  // head.
  uint32_t stepInfo[kFifoSteps];
};
static_assert(sizeof(FifoCounter) == 64, "FifoCounter: one cache line");

// A step's info: the bytes its slot holds (Simple: the payload; LL: the LL words written, 8 bytes
// per 4 payload bytes) and, in the top bit, whether it is an LL step.
constexpr uint32_t kFifoStepLL = 1u << 31;
// CUDA only: an LL128 step (bytes: the 128-byte lines written). A transport that does not carry
// LL128 (the network: its layout has no LL128 slots) never sees it.
constexpr uint32_t kFifoStepLL128 = 1u << 30;
// Host network only (transports/net): the staging slot holds a FifoUserSend, not the payload;
// the step's bytes (the low bits, as for Simple) are at FifoUserSend::data in the sender's
// memory, which the proxy sends from directly (zero copy). The sender's Prims leaves them
// unchanged until head passes the step. Only a sender end with ConnEnd::userSendMinBytes > 0
// (backend/host/user_sends.h) publishes it; the receiver never sees the bit. A device that sends
// only from registered memory (IB verbs, plugins: ConnEnd::userSendRegisteredOnly) gets such steps
// only from inside a buffer registered with ncclCommRegister, which the descriptor names: the
// proxy registers that whole buffer with the device once and keeps the registration until
// ncclCommDeregister (or the connection's end).
constexpr uint32_t kFifoStepUserPtr = 1u << 29;
// A buffer registered with ncclCommRegister, as a zero-copy step names it; id 0: none.
struct UserBufferReg {
  const void* base = nullptr;
  size_t bytes = 0;
  uint64_t id = 0;  // the registration handle (a serial number, never reused)
  // Whether [p, p + n) lies inside this buffer (never for id 0).
  bool covers(const void* p, size_t n) const {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p), start = reinterpret_cast<uintptr_t>(base);
    return id != 0 && lo >= start && lo - start <= bytes && n <= bytes - (lo - start);
  }
};
struct FifoUserSend {
  const void* data;
  UserBufferReg reg;
};
// Host network only (transports/net): the receiving proxy received this Simple step straight into
// the user's memory its receiver named in a FifoLanding, not into the slot; it sets the bit in the
// stepInfo of the receiver's tail counter before it publishes tail (only an end with
// ConnEnd::landings; elsewhere that stepInfo is the sender's and never has it).
constexpr uint32_t kFifoStepLanded = 1u << 28;
// Host network only: where a receiver that only stores step `step`'s bytes (no reduction) wants
// them, published in the end's landing table (ConnEnd::landings, one per slot) before it waits for
// the step. `state` moves: 0 -> step + 1 (the receiver publishes) -> | kLandingClaimed (the proxy
// posted the receive there) -> 0 (the bytes are in, or the proxy stopped the device writing).
// A receiver that gives up on the step first takes back an unclaimed landing (step + 1 -> 0) or
// marks a claimed one | kLandingWithdrawn and waits for 0: the proxy then fails the connection
// and closes its device receive, so nothing is written there after the receiver returns.
// A device that writes only registered memory (IB verbs, plugins) gets landings only inside a
// buffer registered with ncclCommRegister, which `reg` names; the proxy registers that whole buffer
// with the device on its first landing and keeps it, as for zero-copy sends.
struct FifoLanding {
  static constexpr uint64_t kLandingClaimed = 1ull << 62;
  static constexpr uint64_t kLandingWithdrawn = 1ull << 63;
  uint64_t state;
  void* data;
  uint64_t bytes;
  UserBufferReg reg;
};
ACCL_HOST_DEVICE inline uint32_t fifoStepInfo(size_t slotBytes, bool ll) {
  return static_cast<uint32_t>(slotBytes) | (ll ? kFifoStepLL : 0u);
}

// One LL word: 4 data bytes and the 4-byte flag of the step that wrote them. A 16-byte LL line
// is two of these; we treat each 8-byte word independently, which keeps the host atomic width
// at 8 bytes.
struct LLWord {
  uint32_t data;
  uint32_t flag;
};
static_assert(sizeof(LLWord) == 8, "LLWord is one 8-byte atomic unit");

constexpr size_t kLLWordPayload = sizeof(uint32_t);

// Layout of the two memories of a connection. Offsets are relative to the start of each end's
// FIFO memory, so a region mapped at different addresses in two processes describes itself
// identically. LL128 lines are the exception: they must sit on absolute 128-byte boundaries (a
// line is written whole only inside one aligned 128-byte segment), and the FIFO memory starts
// wherever its region's header ends (64 bytes into a page-aligned region): the view rounds the
// address up (makeFifoView), inside kLL128LineBytes of slack the layout reserves. Mappings of one
// region agree on addresses modulo 128 (page-aligned), so both ends find the same lines.
//   receiver's memory: [tail counter][Simple slots][LL slots][slack][LL128 slots, at 128 bytes]
//   sender's memory:   [head counter]
// LL128 slots exist only on the CUDA backend (ll128SlotLines 0 elsewhere: the host carries LL128
// as Simple, and its memory is unchanged).
struct FifoLayout {
  static constexpr size_t kLL128LineBytes = 128;  // 120 data bytes + an 8-byte flag

  size_t simpleSlotBytes;  // bytes of one Simple slot (NCCL_BUFFSIZE / kFifoSteps)
  size_t llSlotWords;      // LL words of one LL slot (NCCL_LL_BUFFSIZE / kFifoSteps / 8)
  size_t ll128SlotLines = 0;  // 128-byte lines of one LL128 slot (NCCL_LL128_BUFFSIZE), a multiple of 4

  ACCL_HOST_DEVICE static constexpr size_t tailOffset() { return 0; }
  ACCL_HOST_DEVICE size_t simpleOffset() const { return sizeof(FifoCounter); }
  ACCL_HOST_DEVICE size_t llOffset() const { return simpleOffset() + simpleSlotBytes * kFifoSteps; }
  // Where the LL128 area may start (the lines themselves: the next absolute 128-byte boundary).
  ACCL_HOST_DEVICE size_t ll128Offset() const { return llOffset() + llSlotWords * sizeof(LLWord) * kFifoSteps; }
  // Bytes of the receiver's memory.
  ACCL_HOST_DEVICE size_t recvBytes() const {
    if (ll128SlotLines == 0) return ll128Offset();
    return ll128Offset() + kLL128LineBytes + ll128SlotLines * kLL128LineBytes * kFifoSteps;
  }
  ACCL_HOST_DEVICE static constexpr size_t headOffset() { return 0; }
  // Bytes of the sender's memory.
  ACCL_HOST_DEVICE static constexpr size_t sendBytes() { return sizeof(FifoCounter); }
  // Payload bytes one LL slot carries.
  ACCL_HOST_DEVICE size_t llSlotPayload() const { return llSlotWords * kLLWordPayload; }
};

// A connection as one end sees it. Both ends hold one; `step` is that end's counter. Every
// pointer is valid in this end's address space: on the receiver `tail` and the slots are local
// and `head` is the sender's (mapped, or a proxy's copy); on the sender the opposite.
struct FifoView {
  FifoCounter* tail = nullptr;  // in the receiver's memory
  FifoCounter* head = nullptr;  // in the sender's memory
  char* simple = nullptr;       // kFifoSteps slots of layout.simpleSlotBytes (receiver's memory)
  LLWord* ll = nullptr;         // kFifoSteps slots of layout.llSlotWords (receiver's memory)
  uint64_t* ll128 = nullptr;    // kFifoSteps slots of layout.ll128SlotLines lines; null without LL128
  FifoLayout layout{};
  uint64_t step = 0;
  // Sender only: the last head value read. A free slot is known without reading head again
  // until the sender gets kFifoSteps ahead of it.
  uint64_t headCache = 0;

  ACCL_HOST_DEVICE char* simpleSlot(uint64_t s) const {
    return simple + (s % kFifoSteps) * layout.simpleSlotBytes;
  }
  ACCL_HOST_DEVICE LLWord* llSlot(uint64_t s) const { return ll + (s % kFifoSteps) * layout.llSlotWords; }
};

// Builds a view from the receiver's FIFO memory (`recvBase`, laid out by `layout`) and the
// sender's (`sendBase`), each as this end addresses it.
inline FifoView makeFifoView(void* recvBase, void* sendBase, const FifoLayout& layout) {
  FifoView v;
  char* r = static_cast<char*>(recvBase);
  v.tail = reinterpret_cast<FifoCounter*>(r + FifoLayout::tailOffset());
  v.head = reinterpret_cast<FifoCounter*>(static_cast<char*>(sendBase) + FifoLayout::headOffset());
  v.simple = r + layout.simpleOffset();
  v.ll = reinterpret_cast<LLWord*>(r + layout.llOffset());
  if (layout.ll128SlotLines) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(r + layout.ll128Offset());
    const uintptr_t line = FifoLayout::kLL128LineBytes;
    v.ll128 = reinterpret_cast<uint64_t*>((at + line - 1) / line * line);
  }
  v.layout = layout;
  return v;
}

}  // namespace accl
