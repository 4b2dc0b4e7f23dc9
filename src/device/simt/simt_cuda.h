// The device-primitives layer under nvcc: the API of simt.h lowered to PTX and CUDA intrinsics
// (sm_70+; the project builds sm_90). Include simt.h, not this file.
#pragma once

#if !defined(__CUDACC__)
#error "simt_cuda.h is the nvcc side of device/simt/simt.h; include simt.h"
#endif

#include <type_traits>

namespace accl::simt {

// ---- indices ------------------------------------------------------------------------------------

ACCL_SIMT_FN int threadIndex() { return int(threadIdx.x); }
ACCL_SIMT_FN int blockIndex() { return int(blockIdx.x); }
ACCL_SIMT_FN int blockSize() { return int(blockDim.x); }
ACCL_SIMT_FN int gridSize() { return int(gridDim.x); }
ACCL_SIMT_FN int laneId() { return int(threadIdx.x) & (kWarpSize - 1); }
ACCL_SIMT_FN int warpIndex() { return int(threadIdx.x) / kWarpSize; }
ACCL_SIMT_FN int warpCount() { return (int(blockDim.x) + kWarpSize - 1) / kWarpSize; }

// ---- warp ---------------------------------------------------------------------------------------

namespace detail {
template <class T>
using ShflWord = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned>;
}  // namespace detail

template <class T>
ACCL_SIMT_FN T shfl(T v, int srcLane, unsigned mask = kFullMask) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shfl moves 4- or 8-byte values");
  using W = detail::ShflWord<T>;
  return bitsAs<T>(__shfl_sync(mask, bitsAs<W>(v), srcLane));
}

template <class T>
ACCL_SIMT_FN T shflXor(T v, int laneMask, unsigned mask = kFullMask) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shflXor moves 4- or 8-byte values");
  using W = detail::ShflWord<T>;
  return bitsAs<T>(__shfl_xor_sync(mask, bitsAs<W>(v), laneMask));
}

ACCL_SIMT_FN unsigned ballot(bool p, unsigned mask = kFullMask) { return __ballot_sync(mask, p); }
ACCL_SIMT_FN bool any(bool p, unsigned mask = kFullMask) { return __any_sync(mask, p) != 0; }
ACCL_SIMT_FN bool all(bool p, unsigned mask = kFullMask) { return __all_sync(mask, p) != 0; }
ACCL_SIMT_FN void syncWarp(unsigned mask = kFullMask) { __syncwarp(mask); }

// ---- block --------------------------------------------------------------------------------------

ACCL_SIMT_FN void barSync(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
ACCL_SIMT_FN void barArrive(int id, int nthreads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
ACCL_SIMT_FN bool barSyncOr(int id, int nthreads, bool pred) {
  unsigned result;
  asm volatile(
      "{\n\t.reg .pred p, q;\n\t"
      "setp.ne.u32 p, %1, 0;\n\t"
      "bar.red.or.pred q, %2, %3, p;\n\t"
      "selp.u32 %0, 1, 0, q;\n\t}"
      : "=r"(result)
      : "r"(unsigned(pred)), "r"(id), "r"(nthreads)
      : "memory");
  return result != 0;
}
ACCL_SIMT_FN void syncBlock() { __syncthreads(); }
ACCL_SIMT_FN bool syncBlockOr(bool pred) { return __syncthreads_or(pred) != 0; }

ACCL_SIMT_FN unsigned char* sharedMem() {
  extern __shared__ __align__(16) unsigned char acclSimtSharedMem[];
  return acclSimtSharedMem;
}

// ---- memory -------------------------------------------------------------------------------------

ACCL_SIMT_FN Vec16 load16(const void* p) {
  ulonglong2 v = *static_cast<const ulonglong2*>(p);
  return Vec16{v.x, v.y};
}
ACCL_SIMT_FN void store16(void* p, Vec16 v) { *static_cast<ulonglong2*>(p) = make_ulonglong2(v.lo, v.hi); }

ACCL_SIMT_FN Vec16 loadVolatile16(const void* p) {
  Vec16 v;
  asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");
  return v;
}
ACCL_SIMT_FN void storeVolatile16(void* p, Vec16 v) {
  asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.lo), "l"(v.hi) : "memory");
}

// FIFO slot data, ordered by the step counters: volatile loads (never a stale L1 line of a slot
// the peer rewrote since), plain vector stores.
ACCL_SIMT_FN Vec16 loadSlot16(const void* p) { return loadVolatile16(p); }
ACCL_SIMT_FN void storeSlot16(void* p, Vec16 v) { store16(p, v); }

ACCL_SIMT_FN uint64_t loadVolatile64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
ACCL_SIMT_FN void storeVolatile64(uint64_t* p, uint64_t v) {
  asm volatile("st.volatile.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
ACCL_SIMT_FN uint32_t loadVolatile32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.volatile.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
ACCL_SIMT_FN void storeVolatile32(uint32_t* p, uint32_t v) {
  asm volatile("st.volatile.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <Scope kScope = Scope::kSystem>
ACCL_SIMT_FN uint64_t loadAcquire(const uint64_t* p) {
  uint64_t v;
  if constexpr (kScope == Scope::kSystem)
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  else
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

template <Scope kScope = Scope::kSystem>
ACCL_SIMT_FN void storeRelease(uint64_t* p, uint64_t v) {
  if constexpr (kScope == Scope::kSystem)
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  else
    asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <Scope kScope = Scope::kSystem>
ACCL_SIMT_FN void fence() {
  if constexpr (kScope == Scope::kSystem) __threadfence_system();
  else __threadfence();
}

ACCL_SIMT_FN uint32_t atomicAdd32(uint32_t* p, uint32_t v) { return atomicAdd(reinterpret_cast<unsigned*>(p), v); }

ACCL_SIMT_FN uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
ACCL_SIMT_FN uint64_t atomicAdd64(uint64_t* p, uint64_t v) {
  return atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// ---- LL -----------------------------------------------------------------------------------------

ACCL_SIMT_FN void llStoreWord(uint64_t* word, uint32_t data, uint32_t flag) {
  storeVolatile64(word, llPack(data, flag));
}
ACCL_SIMT_FN bool llTryLoadWord(const uint64_t* word, uint32_t flag, uint32_t& data) {
  uint64_t w = loadVolatile64(word);
  data = llData(w);
  return llFlag(w) == flag;
}

ACCL_SIMT_FN void llStoreLine(uint64_t* line, uint64_t data, uint32_t flag) {
  asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line), "r"(uint32_t(data)), "r"(flag),
               "r"(uint32_t(data >> 32)), "r"(flag)
               : "memory");
}
ACCL_SIMT_FN bool llTryLoadLine(const uint64_t* line, uint32_t flag, uint64_t& data) {
  uint32_t d0, f0, d1, f1;
  asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
               : "l"(line)
               : "memory");
  data = uint64_t(d0) | (uint64_t(d1) << 32);
  return f0 == flag && f1 == flag;
}

// ---- LL128 --------------------------------------------------------------------------------------

ACCL_SIMT_FN void ll128Store(uint64_t* line, uint64_t w0, uint64_t w1, uint64_t flag) {
  const int part = laneId() % kLL128LanesPerLine;
  const uint64_t second = part == kLL128LanesPerLine - 1 ? flag : w1;
  storeVolatile16(line + 2 * part, Vec16{w0, second});
}
ACCL_SIMT_FN bool ll128TryLoad(const uint64_t* line, uint64_t flag, uint64_t& w0, uint64_t& w1) {
  const int part = laneId() % kLL128LanesPerLine;
  Vec16 v = loadVolatile16(line + 2 * part);
  w0 = v.lo;
  w1 = v.hi;
  const bool mine = part != kLL128LanesPerLine - 1 || v.hi == flag;
  return __all_sync(kFullMask, mine) != 0;
}
// Every pending line's 16 bytes are loaded (kLines loads in flight) before any flag is compared;
// one vote (redux.sync.or; older GPUs: a vote per line) tells every lane which are incomplete.
template <int kLines>
ACCL_SIMT_FN unsigned ll128TryLoadLines(const uint64_t* line, size_t stride, uint64_t flag, unsigned pending,
                                        Vec16 (&v)[kLines]) {
  static_assert(kLines >= 1 && kLines <= 8, "1..8 lines per lane");
  const int part = laneId() % kLL128LanesPerLine;
  const uint64_t* mine = line + 2 * part;
#pragma unroll
  for (int u = 0; u < kLines; ++u)
    if ((pending >> u) & 1u)
      asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                   : "=l"(v[u].lo), "=l"(v[u].hi)
                   : "l"(mine + u * stride)
                   : "memory");
  unsigned late = 0;
  if (part == kLL128LanesPerLine - 1) {
#pragma unroll
    for (int u = 0; u < kLines; ++u)
      if (((pending >> u) & 1u) && v[u].hi != flag) late |= 1u << u;
  }
#if __CUDA_ARCH__ >= 800
  return __reduce_or_sync(kFullMask, late);
#else
  unsigned any = 0;
#pragma unroll
  for (int u = 0; u < kLines; ++u) any |= unsigned(__any_sync(kFullMask, (late >> u) & 1u) != 0) << u;
  return any;
#endif
}

// ---- waiting ------------------------------------------------------------------------------------

template <class Done>
ACCL_SIMT_FN bool spinUntil(Done&& done, const uint32_t* abortFlag, int checkEvery = kAbortCheckSpins) {
  int spins = 0;
  while (!done()) {
    if (abortFlag != nullptr && ++spins >= checkEvery) {
      spins = 0;
      if (loadVolatile32(abortFlag) != 0) return false;
    }
  }
  return true;
}

template <class Done>
ACCL_SIMT_FN bool warpSpinUntil(Done&& done, const uint32_t* abortFlag, int checkEvery = kAbortCheckSpins) {
  int spins = 0;
  while (!done()) {
    if (abortFlag != nullptr && ++spins >= checkEvery) {
      spins = 0;
      if (__any_sync(kFullMask, loadVolatile32(abortFlag) != 0)) return false;
    }
  }
  return true;
}

}  // namespace accl::simt
