// How the host side of a FIFO (device/common/fifo.h) sleeps on a counter and wakes whoever
// sleeps on one: a futex on the low half of the 64-bit counter, which lives in memory both ends
// map (so the wake reaches a sleeper in another process). Waiters register in the counter's
// `sleepers` word; a writer that published calls wakeSleepers, and an end that closes a
// connection wakes every sleeper after setting `closed`. Host code only: the host backend's
// waits (backend/host/host_wait.h), the network proxy and connection teardown use it.
#pragma once

#include <atomic>
#include <cstdint>

namespace accl {

// Sleeps until *word != expected or `timeoutUs` passes (a FUTEX_WAIT on shared memory).
void futexWaitWord(const uint32_t* word, uint32_t expected, int timeoutUs);
// Wakes every thread sleeping on `word`, in any process.
void futexWakeWord(const uint32_t* word);

// The futex word of a 64-bit FIFO counter: its low half (little-endian), which changes on every bump.
inline const uint32_t* counterWord(const uint64_t& counter) { return reinterpret_cast<const uint32_t*>(&counter); }

// After publishing `counter`: wakes the other end if it registered as a sleeper on it.
inline void wakeSleepers(uint32_t& sleepers, const uint64_t& counter) {
  if (std::atomic_ref<uint32_t>(sleepers).load(std::memory_order_seq_cst) != 0) futexWakeWord(counterWord(counter));
}

}  // namespace accl
