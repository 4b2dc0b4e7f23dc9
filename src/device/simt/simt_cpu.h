// The device-primitives layer under a plain C++ compiler: the API of simt.h lowered to
// std::atomic_ref operations and the CPU SIMT harness (cpu_harness.h). Include simt.h, not this
// file.
//
// Mapping: volatile loads/stores are relaxed atomics (8 bytes at a time; a 16-byte vector access
// is two of them), counters use acquire/release, fences are seq_cst thread fences. LL words are
// single 8-byte atomics, stored with release and loaded with acquire: on the GPU an LL word's
// value is its data, so whatever a reader does with that data is ordered after the writer's
// reads that produced it by dependency alone (C++'s memory_order_consume, which compilers promote
// to acquire; free on x86). Without it ThreadSanitizer would report, say, an in-place tree
// all-reduce whose broadcast warps overwrite an element that the reduce warps read before the
// root's result came back. The weak-memory mode keeps LL words relaxed. An LL128 line is published by the flag lane with a release store after
// a warp barrier that follows every lane's (plain) data stores; the reader's flag lane loads the
// flag with acquire and a warp vote orders the other lanes' (plain) data loads after it, so a
// line is never seen partially written (the CPU stand-in for the GPU's 128-byte store
// atomicity), and any code path that reads LL128 data without that order is a data race that
// ThreadSanitizer reports.
//
// In the harness's weak-memory mode (cpu_harness.h, weak_memory.h) every load and store below
// except load16/store16 goes through the model instead: volatile and slot accesses are weak,
// loadAcquire/storeRelease/fence/barriers order as PTX does, and an LL128 line is stored as one
// commit per aligned 128-byte segment (the GPU's store atomicity) with no release or acquire.
// load16/store16 stay plain: user buffers are written before a launch and read after it, each
// element by one thread (and cuda_prims.h also moves partial packets with plain accesses).
#pragma once

#if defined(__CUDACC__)
#error "simt_cpu.h is the CPU side of device/simt/simt.h; include simt.h"
#endif

#include <time.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "device/simt/cpu_harness.h"

namespace accl::simt {

static_assert(cpu::kWarpSize == kWarpSize && cpu::kNamedBarriers == kNamedBarriers, "harness and layer agree");

namespace detail {
template <class T>
ACCL_SIMT_FN std::atomic_ref<T> atom(const T* p) {
  return std::atomic_ref<T>(*const_cast<T*>(p));
}
// The calling thread's side of the weak-memory model, or null (mode off, or outside a launch).
ACCL_SIMT_FN cpu::weak::Thread* weakThread() {
  return cpu::tlsThread != nullptr ? cpu::tlsThread->weak : nullptr;
}
}  // namespace detail

// ---- indices ------------------------------------------------------------------------------------

ACCL_SIMT_FN int threadIndex() { return cpu::currentThread().thread; }
ACCL_SIMT_FN int blockIndex() { return cpu::currentThread().block; }
ACCL_SIMT_FN int blockSize() { return cpu::currentThread().blockDim; }
ACCL_SIMT_FN int gridSize() { return cpu::currentThread().gridDim; }
ACCL_SIMT_FN int laneId() { return threadIndex() % kWarpSize; }
ACCL_SIMT_FN int warpIndex() { return threadIndex() / kWarpSize; }
ACCL_SIMT_FN int warpCount() { return (blockSize() + kWarpSize - 1) / kWarpSize; }

// ---- warp ---------------------------------------------------------------------------------------

namespace detail {
// Every lane of `mask` contributes `value`; all[i] receives lane i's value.
ACCL_SIMT_FN void warpExchange(unsigned mask, uint64_t value, uint64_t (&all)[kWarpSize]) {
  cpu::ThreadCtx& t = cpu::currentThread();
  t.blockState->warps[t.thread / kWarpSize]->exchange(mask, t.thread % kWarpSize, value, all, *t.launch);
}

template <class T>
ACCL_SIMT_FN uint64_t toWord(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "warp shuffles move 4- or 8-byte values");
  uint64_t w = 0;
  memcpy(&w, &v, sizeof(T));
  return w;
}
template <class T>
ACCL_SIMT_FN T fromWord(uint64_t w) {
  T v;
  memcpy(&v, &w, sizeof(T));
  return v;
}

ACCL_SIMT_FN uint64_t laneValue(const uint64_t (&all)[kWarpSize], unsigned mask, int src) {
  src &= kWarpSize - 1;
  if (((mask >> src) & 1u) == 0)
    throw std::logic_error("shfl: source lane " + std::to_string(src) + " is not in the mask");
  return all[src];
}
}  // namespace detail

template <class T>
ACCL_SIMT_FN T shfl(T v, int srcLane, unsigned mask = kFullMask) {
  uint64_t all[kWarpSize];
  detail::warpExchange(mask, detail::toWord(v), all);
  return detail::fromWord<T>(detail::laneValue(all, mask, srcLane));
}

template <class T>
ACCL_SIMT_FN T shflXor(T v, int laneMask, unsigned mask = kFullMask) {
  uint64_t all[kWarpSize];
  detail::warpExchange(mask, detail::toWord(v), all);
  return detail::fromWord<T>(detail::laneValue(all, mask, laneId() ^ laneMask));
}

ACCL_SIMT_FN unsigned ballot(bool p, unsigned mask = kFullMask) {
  uint64_t all[kWarpSize];
  detail::warpExchange(mask, p ? 1 : 0, all);
  unsigned bits = 0;
  for (int i = 0; i < kWarpSize; ++i) bits |= unsigned(all[i] != 0) << i;
  return bits;
}
ACCL_SIMT_FN bool any(bool p, unsigned mask = kFullMask) { return ballot(p, mask) != 0; }
ACCL_SIMT_FN bool all(bool p, unsigned mask = kFullMask) { return ballot(p, mask) == mask; }
ACCL_SIMT_FN void syncWarp(unsigned mask = kFullMask) {
  uint64_t all[kWarpSize];
  cpu::ThreadCtx& t = cpu::currentThread();
  // __syncwarp orders memory among its lanes (shuffles and votes do not): weak mode joins views.
  t.blockState->warps[t.thread / kWarpSize]->exchange(mask, t.thread % kWarpSize, 0, all, *t.launch, t.weak);
}

// ---- block --------------------------------------------------------------------------------------

namespace detail {
ACCL_SIMT_FN bool namedBarrier(int id, int nthreads, bool wait, bool pred) {
  cpu::ThreadCtx& t = cpu::currentThread();
  if (id < 0 || id >= kNamedBarriers || nthreads <= 0 || nthreads % kWarpSize != 0 || nthreads > t.blockDim)
    throw std::logic_error("named barrier " + std::to_string(id) + " with " + std::to_string(nthreads) +
                           " threads: id must be 0..15 and the count whole warps of this block");
  return t.blockState->barriers[id].arrive(nthreads, wait, pred, *t.launch, t.weak, t.thread / kWarpSize);
}
}  // namespace detail

ACCL_SIMT_FN void barSync(int id, int nthreads) { detail::namedBarrier(id, nthreads, /*wait=*/true, false); }
ACCL_SIMT_FN void barArrive(int id, int nthreads) { detail::namedBarrier(id, nthreads, /*wait=*/false, false); }
ACCL_SIMT_FN bool barSyncOr(int id, int nthreads, bool pred) {
  return detail::namedBarrier(id, nthreads, /*wait=*/true, pred);
}
ACCL_SIMT_FN void syncBlock() { barSync(0, blockSize()); }
ACCL_SIMT_FN bool syncBlockOr(bool pred) { return barSyncOr(0, blockSize(), pred); }

ACCL_SIMT_FN unsigned char* sharedMem() { return cpu::currentThread().blockState->shared[0].bytes; }

// ---- memory -------------------------------------------------------------------------------------

ACCL_SIMT_FN Vec16 load16(const void* p) {
  Vec16 v;
  memcpy(&v, p, sizeof v);
  return v;
}
ACCL_SIMT_FN void store16(void* p, Vec16 v) { memcpy(p, &v, sizeof v); }

ACCL_SIMT_FN uint64_t loadVolatile64(const uint64_t* p) {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->loadRelaxed(p, 8);
  return detail::atom(p).load(std::memory_order_relaxed);
}
ACCL_SIMT_FN void storeVolatile64(uint64_t* p, uint64_t v) {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->storeRelaxed(p, 8, v);
  detail::atom(p).store(v, std::memory_order_relaxed);
}
ACCL_SIMT_FN uint32_t loadVolatile32(const uint32_t* p) {
  if (cpu::weak::Thread* w = detail::weakThread()) return uint32_t(w->loadRelaxed(p, 4));
  return detail::atom(p).load(std::memory_order_relaxed);
}
ACCL_SIMT_FN void storeVolatile32(uint32_t* p, uint32_t v) {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->storeRelaxed(p, 4, v);
  detail::atom(p).store(v, std::memory_order_relaxed);
}

ACCL_SIMT_FN Vec16 loadVolatile16(const void* p) {
  const uint64_t* w = static_cast<const uint64_t*>(p);
  return Vec16{loadVolatile64(w), loadVolatile64(w + 1)};
}
ACCL_SIMT_FN void storeVolatile16(void* p, Vec16 v) {
  uint64_t* w = static_cast<uint64_t*>(p);
  storeVolatile64(w, v.lo);
  storeVolatile64(w + 1, v.hi);
}

// FIFO slot data: plain accesses, so ThreadSanitizer checks that the step counters order them;
// weak accesses (two words) in weak-memory mode.
ACCL_SIMT_FN Vec16 loadSlot16(const void* p) {
  if (detail::weakThread() != nullptr) return loadVolatile16(p);
  return load16(p);
}
ACCL_SIMT_FN void storeSlot16(void* p, Vec16 v) {
  if (detail::weakThread() != nullptr) return storeVolatile16(p, v);
  store16(p, v);
}

template <Scope kScope = Scope::kSystem>
ACCL_SIMT_FN uint64_t loadAcquire(const uint64_t* p) {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->loadAcquire(p, 8);
  return detail::atom(p).load(std::memory_order_acquire);
}
template <Scope kScope = Scope::kSystem>
ACCL_SIMT_FN void storeRelease(uint64_t* p, uint64_t v) {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->storeRelease(p, 8, v);
  detail::atom(p).store(v, std::memory_order_release);
}
// Under ThreadSanitizer (which does not model standalone fences) the fence is left out: every
// publication on the CPU also goes through a release store, and code that leaned on the fence
// alone then shows up as a race instead of passing by luck.
template <Scope kScope = Scope::kSystem>
ACCL_SIMT_FN void fence() {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->fence();
#if !defined(__SANITIZE_THREAD__)
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

ACCL_SIMT_FN uint64_t globalTimerNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

ACCL_SIMT_FN uint32_t atomicAdd32(uint32_t* p, uint32_t v) {
  if (cpu::weak::Thread* w = detail::weakThread()) return uint32_t(w->fetchAdd(p, 4, v));
  return detail::atom(p).fetch_add(v, std::memory_order_relaxed);
}
ACCL_SIMT_FN uint64_t atomicAdd64(uint64_t* p, uint64_t v) {
  if (cpu::weak::Thread* w = detail::weakThread()) return w->fetchAdd(p, 8, v);
  return detail::atom(p).fetch_add(v, std::memory_order_relaxed);
}

// ---- LL -----------------------------------------------------------------------------------------

namespace detail {
// An LL word: relaxed in weak-memory mode, consume-ordered (as acquire/release) otherwise; see the
// mapping at the top of this file.
ACCL_SIMT_FN void llStore64(uint64_t* p, uint64_t v) {
  if (cpu::weak::Thread* w = weakThread()) return w->storeRelaxed(p, 8, v);
  atom(p).store(v, std::memory_order_release);
}
ACCL_SIMT_FN uint64_t llLoad64(const uint64_t* p) {
  if (cpu::weak::Thread* w = weakThread()) return w->loadRelaxed(p, 8);
  return atom(p).load(std::memory_order_acquire);
}
}  // namespace detail

ACCL_SIMT_FN void llStoreWord(uint64_t* word, uint32_t data, uint32_t flag) {
  detail::llStore64(word, llPack(data, flag));
}
ACCL_SIMT_FN bool llTryLoadWord(const uint64_t* word, uint32_t flag, uint32_t& data) {
  uint64_t w = detail::llLoad64(word);
  data = llData(w);
  return llFlag(w) == flag;
}

ACCL_SIMT_FN void llStoreLine(uint64_t* line, uint64_t data, uint32_t flag) {
  detail::llStore64(line, llPack(uint32_t(data), flag));
  detail::llStore64(line + 1, llPack(uint32_t(data >> 32), flag));
}
ACCL_SIMT_FN bool llTryLoadLine(const uint64_t* line, uint32_t flag, uint64_t& data) {
  uint64_t a = detail::llLoad64(line);
  uint64_t b = detail::llLoad64(line + 1);
  data = uint64_t(llData(a)) | (uint64_t(llData(b)) << 32);
  return llFlag(a) == flag && llFlag(b) == flag;
}

// ---- LL128 --------------------------------------------------------------------------------------

namespace detail {
// Weak-memory mode: the GPU's LL128 guarantee itself, with no release or acquire. The warp's
// words of each line are gathered in the line's flag lane, which stores the line as one commit
// per aligned 128-byte segment; a load takes one cut-off per segment, chosen by the flag lane.
ACCL_SIMT_FN void ll128StoreWeak(cpu::weak::Thread& w, uint64_t* line, uint64_t w0, uint64_t w1, uint64_t flag) {
  uint64_t all0[kWarpSize], all1[kWarpSize];
  warpExchange(kFullMask, w0, all0);
  warpExchange(kFullMask, w1, all1);
  const int lane = laneId();
  if (lane % kLL128LanesPerLine != kLL128LanesPerLine - 1) return;
  const int first = lane - (kLL128LanesPerLine - 1);
  uint64_t words[kLL128LineWords];
  for (int p = 0; p < kLL128LanesPerLine; ++p) {
    words[2 * p] = all0[first + p];
    words[2 * p + 1] = all1[first + p];
  }
  words[kLL128FlagWord] = flag;
  w.storeLine(line, words);
}

// One line's words for this lane at the cut-offs its flag lane picks (a commit per aligned
// 128-byte segment: an aligned line is read as of one moment).
ACCL_SIMT_FN Vec16 ll128LoadWeak(cpu::weak::Thread& w, const uint64_t* line) {
  const int part = laneId() % kLL128LanesPerLine;
  uint64_t cut[2] = {0, 0};
  if (part == kLL128LanesPerLine - 1) w.lineCutoffs(line, cut);
  const int src = laneId() - part + kLL128LanesPerLine - 1;
  uint64_t lanes[kWarpSize];
  warpExchange(kFullMask, cut[0], lanes);
  cut[0] = lanes[src];
  warpExchange(kFullMask, cut[1], lanes);
  cut[1] = lanes[src];
  const uintptr_t firstSegment = reinterpret_cast<uintptr_t>(line) / 128;
  auto at = [&](int i) {
    return w.loadWordAt(line + i, cut[reinterpret_cast<uintptr_t>(line + i) / 128 == firstSegment ? 0 : 1]);
  };
  return Vec16{at(2 * part), at(2 * part + 1)};
}

// The OR of every lane's `bits` (redux.sync.or).
ACCL_SIMT_FN unsigned warpOr(unsigned bits) {
  uint64_t all[kWarpSize];
  warpExchange(kFullMask, bits, all);
  unsigned any = 0;
  for (uint64_t b : all) any |= unsigned(b);
  return any;
}

// Weak-memory mode of ll128TryLoadLines: every pending line is read (each at its own cut-offs)
// before one vote on the flags; a line still incomplete keeps no data.
template <int kLines>
ACCL_SIMT_FN unsigned ll128TryLoadLinesWeak(cpu::weak::Thread& w, const uint64_t* line, size_t stride,
                                            uint64_t flag, unsigned pending, Vec16 (&v)[kLines]) {
  const bool flagLane = laneId() % kLL128LanesPerLine == kLL128LanesPerLine - 1;
  unsigned late = 0;
  for (int u = 0; u < kLines; ++u) {
    if (((pending >> u) & 1u) == 0) continue;
    v[u] = ll128LoadWeak(w, line + u * stride);
    if (flagLane && v[u].hi != flag) late |= 1u << u;
  }
  late = warpOr(late);
  for (int u = 0; u < kLines; ++u)
    if ((late >> u) & 1u) v[u] = Vec16{0, 0};
  return late;
}

ACCL_SIMT_FN bool ll128TryLoadWeak(cpu::weak::Thread& w, const uint64_t* line, uint64_t flag, uint64_t& w0,
                                   uint64_t& w1) {
  const Vec16 v = ll128LoadWeak(w, line);
  w0 = v.lo;
  w1 = v.hi;
  if (!all(laneId() % kLL128LanesPerLine != kLL128LanesPerLine - 1 || w1 == flag)) {
    w0 = w1 = 0;
    return false;
  }
  return true;
}
}  // namespace detail

ACCL_SIMT_FN void ll128Store(uint64_t* line, uint64_t w0, uint64_t w1, uint64_t flag) {
  if (cpu::weak::Thread* w = detail::weakThread()) return detail::ll128StoreWeak(*w, line, w0, w1, flag);
  const int part = laneId() % kLL128LanesPerLine;
  const bool flagLane = part == kLL128LanesPerLine - 1;
  // Data words are plain stores: only the flag is ever polled, and a reader that touched the data
  // without the flag's happens-before would be a race ThreadSanitizer reports.
  line[2 * part] = w0;
  if (!flagLane) line[2 * part + 1] = w1;
  syncWarp();  // every lane's data is stored before any flag is
  if (flagLane) storeRelease(line + kLL128FlagWord, flag);
}

ACCL_SIMT_FN bool ll128TryLoad(const uint64_t* line, uint64_t flag, uint64_t& w0, uint64_t& w1) {
  if (cpu::weak::Thread* w = detail::weakThread()) return detail::ll128TryLoadWeak(*w, line, flag, w0, w1);
  const int part = laneId() % kLL128LanesPerLine;
  const bool flagLane = part == kLL128LanesPerLine - 1;
  const bool mine = !flagLane || loadAcquire(line + kLL128FlagWord) == flag;
  if (!all(mine)) {  // the vote also orders the data loads below after the flag loads
    w0 = w1 = 0;
    return false;
  }
  w0 = line[2 * part];
  w1 = flagLane ? flag : line[2 * part + 1];
  return true;
}

template <int kLines>
ACCL_SIMT_FN unsigned ll128TryLoadLines(const uint64_t* line, size_t stride, uint64_t flag, unsigned pending,
                                        Vec16 (&v)[kLines]) {
  static_assert(kLines >= 1 && kLines <= 8, "1..8 lines per lane");
  if (cpu::weak::Thread* w = detail::weakThread())
    return detail::ll128TryLoadLinesWeak(*w, line, stride, flag, pending, v);
  const int part = laneId() % kLL128LanesPerLine;
  const bool flagLane = part == kLL128LanesPerLine - 1;
  unsigned late = 0;
  for (int u = 0; u < kLines; ++u)
    if (((pending >> u) & 1u) && flagLane && loadAcquire(line + u * stride + kLL128FlagWord) != flag) late |= 1u << u;
  // The vote orders the data loads below after every flag lane's acquire, as ll128TryLoad's does.
  late = detail::warpOr(late);
  for (int u = 0; u < kLines; ++u) {
    if (((pending & ~late) >> u & 1u) == 0) continue;
    const uint64_t* mine = line + u * stride + 2 * part;
    v[u] = Vec16{mine[0], flagLane ? flag : mine[1]};
  }
  return late;
}

// ---- waiting ------------------------------------------------------------------------------------

// On the CPU a poll is a yield (of the thread, or of the fiber to its block's other 511), not a
// few nanoseconds: the abort flag is read at every poll, and a warp votes on it every
// kCpuWarpAbortCheckSpins polls, so that an abort ends a kernel in a bounded number of rounds.
constexpr int kCpuWarpAbortCheckSpins = 8;

template <class Done>
ACCL_SIMT_FN bool spinUntil(Done&& done, const uint32_t* abortFlag, int checkEvery = kAbortCheckSpins) {
  (void)checkEvery;
  for (int polls = 0; !done(); ++polls) {
    if (abortFlag != nullptr && loadVolatile32(abortFlag) != 0) return false;
    cpu::pollPause(polls);
  }
  return true;
}

template <class Done>
ACCL_SIMT_FN bool warpSpinUntil(Done&& done, const uint32_t* abortFlag, int checkEvery = kAbortCheckSpins) {
  const int every = checkEvery < kCpuWarpAbortCheckSpins ? checkEvery : kCpuWarpAbortCheckSpins;
  int spins = 0;
  for (int polls = 0; !done(); ++polls) {
    if (abortFlag != nullptr && ++spins >= every) {
      spins = 0;
      if (any(loadVolatile32(abortFlag) != 0)) return false;
    }
    cpu::pollPause(polls);
  }
  return true;
}

}  // namespace accl::simt
