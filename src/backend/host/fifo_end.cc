// The waits and the LL writer of one FIFO end (see fifo_end.h).
#include "backend/host/fifo_end.h"

#include <cstring>

#include "core/engine/connections.h"
#include "device/common/chunk_loop.h"

namespace accl {

HostConnEnd hostConnEnd(Connection& conn, bool isSend) {
  HostConnEnd e{&conn.view, conn.peer, conn.peerPid};
  if (isSend) {
    e.userSendMin = conn.userSendMinBytes;
    e.userSendRegisteredOnly = conn.userSendRegisteredOnly;
  } else {
    e.landings = conn.landings;
    e.landMin = conn.landMinBytes;
    e.landRegisteredOnly = conn.landRegisteredOnly;
  }
  return e;
}

ncclResult_t waitSendSlot(const HostConnEnd& c, const WaitPolicy& policy, const char* what) {
  FifoView& f = *c.fifo;
  if (sendSlotFree(f)) return ncclSuccess;
  return waitUntil(
      policy, [&] { return sendSlotFree(f); }, counterWord(f.head->value), &f.head->sleepers, sendWaitPeer(c), what);
}

ncclResult_t waitSendDone(const HostConnEnd& c, uint64_t step, const WaitPolicy& policy, const char* what) {
  FifoView& f = *c.fifo;
  auto done = [&] {
    if (f.headCache > step) return true;
    f.headCache = fifoCounter(f.head).load(std::memory_order_acquire);
    return f.headCache > step;
  };
  if (done()) return ncclSuccess;
  return waitUntil(policy, done, counterWord(f.head->value), &f.head->sleepers, sendWaitPeer(c), what);
}

void writeLLSlot(FifoView& f, const char* payload, size_t bytes) {
  LLWord* slot = f.llSlot(f.step);
  const size_t fullWords = bytes / kLLWordPayload;
  const uint64_t flagBits = static_cast<uint64_t>(llFlag(f.step)) << 32;  // LLWord::flag is the high half
  auto store = [&](size_t w, uint32_t data) {
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(&slot[w])).store(flagBits | data, std::memory_order_relaxed);
  };
  // Whole words with a fixed-size copy (inlined: a variable-size memcpy per 4-byte word was a
  // library call per word, most of a small LL step's time); the partial last word apart.
  for (size_t w = 0; w < fullWords; ++w) {
    uint32_t data;
    std::memcpy(&data, payload + w * kLLWordPayload, kLLWordPayload);
    store(w, data);
  }
  if (const size_t rest = bytes - fullWords * kLLWordPayload) {
    uint32_t data = 0;
    std::memcpy(&data, payload + fullWords * kLLWordPayload, rest);
    store(fullWords, data);
  }
}

bool tryReadLL(const FifoView& f, size_t bytes, char* out) {
  if (bytes == 0) return simpleDataReady(f);  // no words: the tail bump is the step
  const size_t words = divUp(bytes, kLLWordPayload);
  const LLWord* slot = f.llSlot(f.step);
  const uint32_t flag = llFlag(f.step);
  auto load = [&](size_t w) {
    uint64_t raw = std::atomic_ref<const uint64_t>(*reinterpret_cast<const uint64_t*>(&slot[w]))
                       .load(std::memory_order_relaxed);
    LLWord word;
    std::memcpy(&word, &raw, sizeof(word));
    return word;
  };
  if (load(words - 1).flag != flag) return false;  // the sender writes in order: the last word comes last
  const size_t fullWords = bytes / kLLWordPayload;
  for (size_t w = 0; w < fullWords; ++w) {  // fixed-size copies, inlined (see writeLLSlot)
    const LLWord word = load(w);
    if (word.flag != flag) return false;
    std::memcpy(out + w * kLLWordPayload, &word.data, kLLWordPayload);
  }
  if (fullWords < words) {
    const LLWord word = load(fullWords);
    if (word.flag != flag) return false;
    std::memcpy(out + fullWords * kLLWordPayload, &word.data, bytes - fullWords * kLLWordPayload);
  }
  return true;
}

void sendStepUnfenced(FifoView& f, const char* payload, size_t bytes, bool ll) {
  if (ll) {
    writeLLSlot(f, payload, bytes);
    publishTailUnfenced(f, fifoStepInfo(divUp(bytes, kLLWordPayload) * sizeof(LLWord), true));
    return;
  }
  if (bytes) std::memcpy(f.simpleSlot(f.step), payload, bytes);
  publishTailUnfenced(f, fifoStepInfo(bytes, false));
}

bool recvStepUnfenced(FifoView& f, size_t bytes, char* out, bool ll) {
  if (ll) {
    if (!tryReadLL(f, bytes, out)) return false;
  } else {
    if (!simpleDataReady(f)) return false;
    if (bytes) std::memcpy(out, f.simpleSlot(f.step), bytes);
  }
  releaseHeadUnfenced(f);
  return true;
}

ncclResult_t waitSimpleData(const HostConnEnd& c, const WaitPolicy& policy, const char* what) {
  FifoView& f = *c.fifo;
  if (simpleDataReady(f)) return ncclSuccess;
  return waitUntil(
      policy, [&] { return simpleDataReady(f); }, counterWord(f.tail->value), &f.tail->sleepers, recvWaitPeer(c),
      what);
}

ncclResult_t waitLLData(const HostConnEnd& c, size_t bytes, char* out, const WaitPolicy& policy, const char* what) {
  FifoView& f = *c.fifo;
  if (bytes == 0) return waitSimpleData(c, policy, what);  // no words: the tail bump is the step
  const size_t words = divUp(bytes, kLLWordPayload);
  LLWord* slot = f.llSlot(f.step);
  const uint32_t flag = llFlag(f.step);
  size_t ready = 0;
  auto load = [&](size_t w) {
    uint64_t raw = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(&slot[w])).load(std::memory_order_relaxed);
    LLWord word;
    std::memcpy(&word, &raw, sizeof(word));
    return word;
  };
  auto allArrived = [&] {
    // Poll only the last word until it lands: scanning words while the sender is still writing
    // them would bounce every cache line between the two cores. The sender writes in order, so
    // by then the others are (nearly always) there; each word's own flag is still checked.
    if (ready == 0 && load(words - 1).flag != flag) return false;
    while (ready < words) {
      const LLWord w = load(ready);
      if (w.flag != flag) return false;
      std::memcpy(out + ready * kLLWordPayload, &w.data, kLLWordPayload);
      ++ready;
    }
    return true;
  };
  return waitUntil(policy, allArrived, counterWord(f.tail->value), &f.tail->sleepers, recvWaitPeer(c), what);
}

}  // namespace accl
