// The device-primitives layer: every GPU-specific operation the CUDA Prims use, behind one API
// that compiles two ways.
//
//   * Under nvcc (__CUDACC__) the functions are __device__ and lower to PTX / CUDA intrinsics
//     (simt_cuda.h).
//   * Under a plain C++ compiler they lower to std::atomic_ref operations and calls into the CPU
//     SIMT harness (simt_cpu.h, cpu_harness.h), which runs a grid of small blocks with one
//     std::thread per GPU thread (or, in fiber mode, one per block), so the same Prims code runs,
//     with a real memory model, in CI.
//
// API (namespace accl::simt; every function is ACCL_SIMT_FN):
//
//   Indices        threadIndex() blockIndex() blockSize() gridSize() laneId() warpIndex()
//                  warpCount()  -- 1-D blocks and grids only; kWarpSize == 32.
//   Warp           shfl(v, src, mask) shflXor(v, laneMask, mask) ballot(p, mask) any(p, mask)
//                  all(p, mask) syncWarp(mask)  -- every lane named in `mask` must call, with the
//                  same mask; v is any trivially copyable type of 4 or 8 bytes.
//   Block          barSync(id, n) barArrive(id, n) syncBlock()  -- named barriers 0..15 (bar.sync /
//                  bar.arrive): n counts threads, a multiple of 32, whole warps take part; id 0
//                  is what syncBlock uses. barSyncOr(id, n, p) / syncBlockOr(p): the barrier that
//                  also returns the OR of every participant's p (bar.red.or, __syncthreads_or),
//                  for block-uniform decisions such as "stop: a wait was aborted".
//   Shared memory  sharedMem()  -- the launch's dynamic shared memory (16-byte aligned).
//   Memory         Vec16 load16/store16 (plain, user buffers), loadVolatile16/storeVolatile16
//                  (polled data), loadSlot16/storeSlot16 (FIFO slot data ordered by the step
//                  counters: CUDA volatile load / plain store, CPU plain so that ThreadSanitizer
//                  checks the order), loadVolatile64/storeVolatile64, loadVolatile32/
//                  storeVolatile32, loadAcquire<Scope>/storeRelease<Scope> (step counters),
//                  fence<Scope>()  -- all naturally aligned (vectors: 16 bytes). Scope::kGpu:
//                  peers on this device; Scope::kSystem: peers in another process's mapping or in
//                  host memory. atomicAdd32/atomicAdd64: relaxed, device scope (statistics and
//                  error counts, not synchronisation).
//   LL             llStoreWord/llTryLoadWord: one 8-byte word, 4 data bytes + 4-byte flag, written
//                  and read as one unit. llStoreLine/llTryLoadLine: a 16-byte line of two words
//                  (8 data bytes) in one vector access; a line is complete when both flags match.
//   LL128          ll128Store/ll128TryLoad: warp-collective. A 128-byte line is 16 uint64 words:
//                  words 0..14 carry 120 data bytes, word 15 the flag. Lanes 8g..8g+7 of a warp
//                  handle one line (the same `line` pointer); lane 8g+p holds words 2p and 2p+1
//                  (lane 8g+7: word 14 and the flag). A reader never accepts a partial line: under
//                  CUDA by the warp's 128-byte store atomicity (NVLink / same device), on the CPU
//                  by a release store of the flag after the whole warp wrote its words.
//                  ll128TryLoadLines<K>(line, stride, flag, pending, v): the same read for up to K
//                  (1..8) lines per lane, line u at `line + u * stride` words. For each bit u of
//                  `pending` (the same in every lane) it loads v[u], every load issued before any
//                  flag is compared, then votes once and returns (in every lane) the bits of
//                  `pending` whose line is incomplete in some lane. v[u] of a bit it clears holds the
//                  line's words as ll128TryLoad gives them, with the same no-partial-line guarantee
//                  (on the CPU: the flag lanes' acquires before the vote, or the weak model's
//                  segment commits); v[u] of a bit not in `pending` is left alone.
//   Time           globalTimerNs() -- nanoseconds of a clock every block of the device shares
//                  (%globaltimer on a GPU, CLOCK_MONOTONIC on the CPU), for profiler timestamps.
//   Waiting        spinUntil(done, abortFlag) -- polls done() until it is true (returns true) or
//                  *abortFlag != 0, checked every kAbortCheckSpins polls on a GPU, every poll on the
//                  CPU, where it also yields and stops at the harness deadline. warpSpinUntil: the same
//                  for a warp-collective done() (e.g. ll128TryLoad); the abort decision is a warp
//                  vote, so every lane leaves the loop together.
//
// Memory model the Prims rely on: data published with plain/volatile stores becomes visible to a
// reader that sees a counter stored with storeRelease after them (loadAcquire on the reader's
// side); LL and LL128 need no counter and no fence.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/common/host_device.h"

#if defined(__CUDACC__)
#define ACCL_SIMT_FN __device__ __forceinline__
#else
#define ACCL_SIMT_FN inline
#endif

namespace accl::simt {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kNamedBarriers = 16;
// How many polls a spin loop makes between two reads of the abort flag.
constexpr int kAbortCheckSpins = 1024;

// Who else reads the memory a fence or counter orders.
enum class Scope { kGpu, kSystem };

// 16 bytes moved by one vector access.
struct alignas(16) Vec16 {
  uint64_t lo;
  uint64_t hi;
};

// LL word layout: data in the low 4 bytes, flag in the high 4 (LLWord of device/common/fifo.h).
ACCL_HOST_DEVICE ACCL_INLINE uint64_t llPack(uint32_t data, uint32_t flag) {
  return uint64_t(data) | (uint64_t(flag) << 32);
}
ACCL_HOST_DEVICE ACCL_INLINE uint32_t llData(uint64_t word) { return uint32_t(word); }
ACCL_HOST_DEVICE ACCL_INLINE uint32_t llFlag(uint64_t word) { return uint32_t(word >> 32); }

// LL128 line geometry.
constexpr int kLL128LineWords = 16;                       // uint64 words of one 128-byte line
constexpr int kLL128DataWords = 15;                       // words carrying data (120 bytes)
constexpr int kLL128FlagWord = 15;                        // the flag's word in the line
constexpr int kLL128LanesPerLine = 8;                     // lanes cooperating on one line
constexpr int kLL128LinesPerWarp = kWarpSize / kLL128LanesPerLine;
constexpr size_t kLL128LineBytes = kLL128LineWords * sizeof(uint64_t);
constexpr size_t kLL128LineDataBytes = kLL128DataWords * sizeof(uint64_t);

}  // namespace accl::simt

#if defined(__CUDACC__)
#include "device/simt/simt_cuda.h"
#else
#include "device/simt/simt_cpu.h"
#endif
