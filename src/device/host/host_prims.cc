// HostPrims: the schedule steps over the Simple and LL FIFO protocols, with one thread.
#include "device/host/host_prims.h"

#include <atomic>
#include <cstring>

#include "algos/chunk_loop.h"
#include "device/common/reduce_buffers.h"
#include "device/common/dtypes.h"
#include "util/check.h"

namespace accl {
namespace {

std::atomic_ref<uint64_t> counter(uint64_t& word) { return std::atomic_ref<uint64_t>(word); }

uint32_t llFlag(uint64_t step) { return static_cast<uint32_t>(step + 1); }

WaitPeer waitPeer(const HostConnEnd& c) { return WaitPeer{c.peerRank, c.peerPid, &c.fifo->ctrl->closed}; }

}  // namespace

HostPrims::HostPrims(const HostPrimsArgs& args) : args_(args), elemSize_(dtypeSize(args.type)) {}

size_t HostPrims::chunkCapacity(const FifoLayout& layout, ProtoId proto, size_t elemSize) {
  size_t bytes = proto == kProtoLL ? layout.llSlotPayload() : layout.simpleSlotBytes;
  size_t elems = bytes / elemSize;
  return elems > 0 ? elems : 1;
}

char* HostPrims::scratch(int i, size_t bytes) {
  std::vector<char>& s = scratch_[i];
  if (s.size() < bytes + 8) s.resize(bytes + 8);
  return s.data();
}

const char* HostPrims::waitRecv(int i, size_t bytes) {
  HostConnEnd& c = args_.recv[i];
  FifoView& f = *c.fifo;
  const uint64_t step = f.step;
  uint64_t& tail = f.ctrl->tail;
  if (args_.proto == kProtoSimple || bytes == 0) {
    status_ = waitUntil(
        *args_.wait, [&] { return counter(tail).load(std::memory_order_acquire) > step; }, counterWord(tail),
        &f.ctrl->tailSleepers, waitPeer(c), args_.what);
    return args_.proto == kProtoSimple ? f.simpleSlot(step) : scratch(i, 0);
  }
  // LL: a word is complete when its flag is this step's; scan forward as words arrive.
  const size_t words = divUp(bytes, kLLWordPayload);
  LLWord* slot = f.llSlot(step);
  char* out = scratch(i, words * kLLWordPayload);
  const uint32_t flag = llFlag(step);
  size_t ready = 0;
  auto wordArrived = [&](size_t w) {
    uint64_t raw = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(&slot[w])).load(std::memory_order_relaxed);
    return static_cast<uint32_t>(raw >> 32) == flag;  // LLWord::flag is the high half on little-endian
  };
  auto allArrived = [&] {
    // Poll only the last word until it lands: scanning words while the sender is still writing
    // them would bounce every cache line between the two cores. The sender writes in order, so
    // by then the others are (nearly always) there; each word's own flag is still checked.
    if (ready == 0 && !wordArrived(words - 1)) return false;
    while (ready < words) {
      uint64_t raw = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(&slot[ready]))
                         .load(std::memory_order_relaxed);
      LLWord w;
      std::memcpy(&w, &raw, sizeof(w));
      if (w.flag != flag) return false;
      std::memcpy(out + ready * kLLWordPayload, &w.data, kLLWordPayload);
      ++ready;
    }
    return true;
  };
  status_ = waitUntil(*args_.wait, allArrived, counterWord(tail), &f.ctrl->tailSleepers, waitPeer(c), args_.what);
  return out;
}

void HostPrims::releaseRecv(int i) {
  FifoView& f = *args_.recv[i].fifo;
  counter(f.ctrl->head).store(f.step + 1, std::memory_order_seq_cst);
  wakeSleepers(f.ctrl->headSleepers, f.ctrl->head);
  f.step++;
}

char* HostPrims::waitSendSlot(int i, size_t bytes) {
  HostConnEnd& c = args_.send[i];
  FifoView& f = *c.fifo;
  const uint64_t step = f.step;
  uint64_t& head = f.ctrl->head;
  if (static_cast<int64_t>(step - f.headCache) >= kFifoSteps) {
    status_ = waitUntil(
        *args_.wait,
        [&] {
          f.headCache = counter(head).load(std::memory_order_acquire);
          return static_cast<int64_t>(step - f.headCache) < kFifoSteps;
        },
        counterWord(head), &f.ctrl->headSleepers, waitPeer(c), args_.what);
  }
  return args_.proto == kProtoSimple ? f.simpleSlot(step) : nullptr;
}

void HostPrims::postSend(int i, const char* payload, size_t bytes) {
  FifoView& f = *args_.send[i].fifo;
  if (args_.proto == kProtoLL) {
    const size_t words = divUp(bytes, kLLWordPayload);
    LLWord* slot = f.llSlot(f.step);
    const uint32_t flag = llFlag(f.step);
    const size_t fullWords = bytes / kLLWordPayload;
    const uint64_t flagBits = static_cast<uint64_t>(flag) << 32;  // LLWord::flag is the high half
    for (size_t w = 0; w < words; ++w) {
      uint32_t data = 0;
      if (w < fullWords)
        std::memcpy(&data, payload + w * kLLWordPayload, kLLWordPayload);
      else
        std::memcpy(&data, payload + w * kLLWordPayload, bytes - w * kLLWordPayload);
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(&slot[w])).store(flagBits | data,
                                                                              std::memory_order_relaxed);
    }
  }
  // Simple: the payload is already in the slot. Both protocols bump tail (LL receivers sleep on it).
  counter(f.ctrl->tail).store(f.step + 1, std::memory_order_seq_cst);
  wakeSleepers(f.ctrl->tailSleepers, f.ctrl->tail);
  f.step++;
}

void HostPrims::step(unsigned what, size_t in, size_t out, size_t n) {
  if (status_ != ncclSuccess) return;
  const size_t bytes = n * elemSize_;
  const bool simple = args_.proto == kProtoSimple;
  const char* received[kMaxTreeChildren] = {};
  if (what & kRecv) {
    for (int i = 0; i < args_.nRecv; ++i) {
      received[i] = waitRecv(i, bytes);
      if (status_ != ncclSuccess) return;
    }
  }

  // Where the value of this step is computed: the output, else (Simple) straight into the first
  // send slot, else a scratch buffer.
  char* firstSlot = nullptr;
  char* dst;
  if (what & kOut) {
    dst = outPtr(out);
  } else if ((what & kSend) && simple) {
    dst = firstSlot = waitSendSlot(0, bytes);
    if (status_ != ncclSuccess) return;
  } else {
    dst = scratch(kMaxTreeChildren, bytes);
  }

  const char* value = dst;
  const unsigned pre = args_.inputIsContribution ? kPreOpB : 0u;
  const unsigned post = (what & kPost) ? kPostOp : 0u;
  ncclResult_t res = ncclSuccess;
  if ((what & kRecv) && (what & kIn)) {
    for (int i = 0; i < args_.nRecv && res == ncclSuccess; ++i) {
      const unsigned last = i == args_.nRecv - 1 ? post : 0u;
      res = i == 0 ? reduceBuffers(dst, received[0], inPtr(in), n, args_.type, args_.op, pre | last)
                   : reduceBuffers(dst, dst, received[i], n, args_.type, args_.op, last);
    }
  } else if (what & kRecv) {
    if ((what & kOut) || firstSlot)
      std::memcpy(dst, received[0], bytes);
    else
      value = received[0];  // forwarded as is (LL)
  } else if (what & kIn) {
    res = args_.inputIsContribution ? applyPreOp(dst, inPtr(in), n, args_.type, args_.op)
                                    : (std::memmove(dst, inPtr(in), bytes), ncclSuccess);
    if (res == ncclSuccess && post) res = applyPostOp(dst, dst, n, args_.type, args_.op);
  }
  if (res != ncclSuccess) {
    status_ = res;
    return;
  }

  if (what & kSend) {
    for (int i = 0; i < args_.nSend; ++i) {
      char* slot = (i == 0 && firstSlot) ? firstSlot : waitSendSlot(i, bytes);
      if (status_ != ncclSuccess) return;
      if (simple && slot != value) std::memcpy(slot, value, bytes);
      postSend(i, value, bytes);
    }
  }
  if (what & kRecv)
    for (int i = 0; i < args_.nRecv; ++i) releaseRecv(i);
}

void HostPrims::send(size_t in, size_t n) { step(kIn | kSend, in, 0, n); }
void HostPrims::recv(size_t out, size_t n) { step(kRecv | kOut, 0, out, n); }
void HostPrims::recvReduceSend(size_t in, size_t n) { step(kRecv | kIn | kSend, in, 0, n); }
void HostPrims::recvReduceCopySend(size_t in, size_t out, size_t n, bool postOp) {
  step(kRecv | kIn | kOut | kSend | (postOp ? kPost : 0u), in, out, n);
}
void HostPrims::recvCopySend(size_t out, size_t n) { step(kRecv | kOut | kSend, 0, out, n); }
void HostPrims::copySend(size_t in, size_t out, size_t n, bool postOp) {
  step(kIn | kOut | kSend | (postOp ? kPost : 0u), in, out, n);
}
void HostPrims::recvReduceCopy(size_t in, size_t out, size_t n, bool postOp) {
  step(kRecv | kIn | kOut | (postOp ? kPost : 0u), in, out, n);
}
void HostPrims::localCopy(size_t in, size_t out, size_t n, bool postOp) {
  step(kIn | kOut | (postOp ? kPost : 0u), in, out, n);
}

}  // namespace accl
