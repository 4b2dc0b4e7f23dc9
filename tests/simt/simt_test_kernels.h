// Test kernels for the device-primitives layer (src/device/simt), written once against simt.h:
// tests/simt runs them on the CPU SIMT harness, tests/gpu wraps each in a __global__ kernel
// (compiled for sm_90 in CI; run where a GPU exists). A kernel never asserts: it counts what it
// found wrong in `errors` (and the host checks buffers it filled), so both runners judge it the
// same way.
//
// Two-block kernels (ping-pong, handoff) need both blocks resident at once: grid = 2 blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/simt/simt.h"

namespace accl::simttest {

using namespace accl::simt;

// ---- values the kernels write and check (closed form) -------------------------------------------

ACCL_HOST_DEVICE inline uint64_t pattern(uint64_t step, uint64_t index, uint64_t salt) {
  uint64_t x = (step + 1) * 0x9e3779b97f4a7c15ull ^ (index + 1) * 0xc2b2ae3d27d4eb4full ^ salt;
  return x ^ (x >> 29);
}

// ---- indices ------------------------------------------------------------------------------------

constexpr int kIndexFields = 7;
// out[globalThread * 7 + ...] = block, thread, lane, warp, warpCount, blockSize, gridSize.
ACCL_SIMT_FN void indicesKernel(int* out) {
  int* o = out + (blockIndex() * blockSize() + threadIndex()) * kIndexFields;
  o[0] = blockIndex();
  o[1] = threadIndex();
  o[2] = laneId();
  o[3] = warpIndex();
  o[4] = warpCount();
  o[5] = blockSize();
  o[6] = gridSize();
}

// ---- warp shuffles and votes --------------------------------------------------------------------

ACCL_SIMT_FN void warpOpsKernel(uint32_t* errors, int iterations) {
  const int lane = laneId();
  const int salt = blockIndex() * 1000 + warpIndex() * 100;
  uint32_t bad = 0;
  for (int it = 0; it < iterations; ++it) {
    // 4-byte shuffle from a rotating source lane.
    const int src = (lane + 3 + it) % kWarpSize;
    int got = shfl(lane * 7 + it + salt, src);
    bad += got != src * 7 + it + salt;
    // 8-byte shuffle.
    uint64_t wide = shfl((uint64_t(lane) << 40) | uint64_t(it), kWarpSize - 1 - lane);
    bad += wide != ((uint64_t(kWarpSize - 1 - lane) << 40) | uint64_t(it));
    // Butterfly sum with xor shuffles: every lane ends with the warp's sum (exact in double).
    double sum = lane + 0.5 * it;
    for (int m = kWarpSize / 2; m >= 1; m /= 2) sum += shflXor(sum, m);
    bad += sum != 496.0 + 16.0 * it;
    // Votes.
    bad += ballot(lane % 3 == 0) != 0x49249249u;
    bad += ballot((lane + it) % 2 == 0) != ((it % 2 == 0) ? 0x55555555u : 0xaaaaaaaau);
    bad += !any(lane == it % kWarpSize);
    bad += any(lane >= kWarpSize);
    bad += !all(lane < kWarpSize);
    bad += all(lane != it % kWarpSize);
    // The two half-warps run their own collectives at the same time.
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    int partner = shfl(lane + it, lane ^ 1, half);
    bad += partner != (lane ^ 1) + it;
    bad += ballot(true, half) != half;
    bad += !all((lane < 16) == (half == 0x0000ffffu), half);
    syncWarp(half);
    syncWarp();
  }
  if (bad != 0) atomicAdd32(errors, bad);
}

// ---- named barriers -----------------------------------------------------------------------------

constexpr int kNamedBarrierBlock = 128;  // 4 warps: two pairs with their own barriers
constexpr size_t kNamedBarrierShared = 3 * 64 * sizeof(uint32_t);

// Warps 0-1 and warps 2-3 each exchange values through shared memory under their own barrier
// (ids 1 and 2, 64 threads); warp 0 hands a mailbox to warp 2 with bar.arrive / bar.sync
// (ids 3 and 4); every iteration ends with syncBlock.
ACCL_SIMT_FN void namedBarrierKernel(uint32_t* errors, int iterations) {
  uint32_t* pairBuf = reinterpret_cast<uint32_t*>(sharedMem());  // [2][64]
  uint32_t* mailbox = pairBuf + 128;                              // [32]
  const int t = threadIndex();
  const int pair = t / 64;
  const int inPair = t % 64;
  const int barrier = 1 + pair;
  uint32_t bad = 0;
  for (int it = 0; it < iterations; ++it) {
    pairBuf[pair * 64 + inPair] = uint32_t(it * 1000 + t);
    barSync(barrier, 64);
    const int other = (inPair + 32) % 64;  // a thread of the other warp of the pair
    bad += pairBuf[pair * 64 + other] != uint32_t(it * 1000 + pair * 64 + other);
    barSync(barrier, 64);

    if (warpIndex() == 0) {
      mailbox[laneId()] = uint32_t(it * 7 + laneId());
      barArrive(3, 64);  // mailbox full
      barSync(4, 64);    // wait until warp 2 has read it
    } else if (warpIndex() == 2) {
      barSync(3, 64);
      bad += mailbox[laneId()] != uint32_t(it * 7 + laneId());
      barArrive(4, 64);
    }
    syncBlock();
  }
  if (bad != 0) atomicAdd32(errors, bad);
}

// ---- vector loads and stores --------------------------------------------------------------------

// dst = src, 16 bytes per access, grid-stride; volatile accesses when `useVolatile`.
ACCL_SIMT_FN void vectorCopyKernel(const void* src, void* dst, size_t vectors, bool useVolatile) {
  const size_t stride = size_t(gridSize()) * blockSize();
  for (size_t i = size_t(blockIndex()) * blockSize() + threadIndex(); i < vectors; i += stride) {
    const char* s = static_cast<const char*>(src) + i * sizeof(Vec16);
    char* d = static_cast<char*>(dst) + i * sizeof(Vec16);
    if (useVolatile) storeVolatile16(d, loadVolatile16(s));
    else store16(d, load16(s));
  }
}

// ---- release/acquire counter handoff (the Simple protocol's skeleton) ---------------------------

constexpr int kHandoffSlots = 4;

struct HandoffArgs {
  uint64_t* slots;       // kHandoffSlots slots of slotWords words, 16-byte aligned
  int slotWords;         // even
  uint64_t* tail;        // sender -> receiver: steps published
  uint64_t* head;        // receiver -> sender: steps released
  int steps;
  uint32_t* errors;
  const uint32_t* abortFlag;
};

// Block 0 sends, block 1 receives. Thread 0 of each block waits on the counter, a block barrier
// hands the verdict to the others; the sender's data is published by a fence and a release store
// of tail after a block barrier, the receiver releases the slot the same way through head. The
// slots are accessed with loadSlot16/storeSlot16 (plain on the CPU), so there a missing link in
// that chain is a data race ThreadSanitizer reports.
// Needs 4 bytes of dynamic shared memory.
ACCL_SIMT_FN void counterHandoffKernel(HandoffArgs a) {
  const bool sender = blockIndex() == 0;
  uint32_t bad = 0;
  for (int s = 0; s < a.steps; ++s) {
    uint64_t* slot = a.slots + size_t(s % kHandoffSlots) * a.slotWords;
    if (threadIndex() == 0) {
      bool ok = sender ? spinUntil([&] { return loadAcquire(a.head) + kHandoffSlots > uint64_t(s); }, a.abortFlag)
                       : spinUntil([&] { return loadAcquire(a.tail) > uint64_t(s); }, a.abortFlag);
      reinterpret_cast<int*>(sharedMem())[0] = ok ? 0 : 1;
    }
    syncBlock();
    if (reinterpret_cast<volatile int*>(sharedMem())[0] != 0) break;
    for (int w = 2 * threadIndex(); w < a.slotWords; w += 2 * blockSize()) {
      if (sender) {
        storeSlot16(slot + w, Vec16{pattern(s, w, 1), pattern(s, w + 1, 1)});
      } else {
        Vec16 v = loadSlot16(slot + w);
        bad += v.lo != pattern(s, w, 1);
        bad += v.hi != pattern(s, w + 1, 1);
      }
    }
    syncBlock();
    if (threadIndex() == 0) {
      fence<Scope::kSystem>();
      storeRelease(sender ? a.tail : a.head, uint64_t(s + 1));
    }
  }
  if (bad != 0) atomicAdd32(a.errors, bad);
}

// ---- LL ping-pong ------------------------------------------------------------------------------

struct LLPingPongArgs {
  uint64_t* ab;  // block 0 -> block 1: `words` LL words
  uint64_t* ba;  // block 1 -> block 0
  int words;     // even when `lines`
  int steps;
  bool lines;    // 16-byte lines (two words per access) instead of single words
  uint32_t* errors;
  const uint32_t* abortFlag;
};

// Step s: block 0 writes its words with flag s + 1, block 1 waits for each of them and answers
// with its own; block 0 waits for the answer before step s + 1. Every thread handles the same
// word indices on both sides, so no block barrier is needed: LL carries its own flags.
ACCL_SIMT_FN void llPingPongKernel(LLPingPongArgs a) {
  const bool ping = blockIndex() == 0;
  const int unit = a.lines ? 2 : 1;
  uint32_t bad = 0;
  for (int s = 0; s < a.steps; ++s) {
    const uint32_t flag = uint32_t(s + 1);
    for (int half = 0; half < 2; ++half) {
      const bool writing = (half == 0) == ping;
      uint64_t* buf = (half == 0) ? a.ab : a.ba;
      const uint64_t salt = 2 + half;
      for (int w = unit * threadIndex(); w < a.words; w += unit * blockSize()) {
        if (writing) {
          if (a.lines) llStoreLine(buf + w, pattern(s, w, salt), flag);
          else llStoreWord(buf + w, uint32_t(pattern(s, w, salt)), flag);
          continue;
        }
        uint64_t got = 0;
        bool ok;
        if (a.lines) {
          ok = spinUntil([&] { return llTryLoadLine(buf + w, flag, got); }, a.abortFlag);
          bad += ok && got != pattern(s, w, salt);
        } else {
          uint32_t word = 0;
          ok = spinUntil([&] { return llTryLoadWord(buf + w, flag, word); }, a.abortFlag);
          bad += ok && word != uint32_t(pattern(s, w, salt));
        }
        if (!ok) {
          atomicAdd32(a.errors, bad + 1);
          return;
        }
      }
    }
  }
  if (bad != 0) atomicAdd32(a.errors, bad);
}

// ---- LL128 ping-pong ----------------------------------------------------------------------------

struct LL128PingPongArgs {
  uint64_t* ab;  // block 0 -> block 1: `lines` 128-byte lines
  uint64_t* ba;
  int lines;     // a multiple of 4 (kLL128LinesPerWarp)
  int steps;
  uint32_t* errors;
  const uint32_t* abortFlag;
};

// As llPingPongKernel, with 128-byte lines written and read by whole warps: lanes 8g..8g+7 of
// warp w handle line 4 * (w + k * warps) + g. Every data word of a line is checked against the
// step the flag names, so a partially visible line is an error.
ACCL_SIMT_FN void ll128PingPongKernel(LL128PingPongArgs a) {
  const bool ping = blockIndex() == 0;
  const int part = laneId() % kLL128LanesPerLine;
  const int group = laneId() / kLL128LanesPerLine;
  uint32_t bad = 0;
  for (int s = 0; s < a.steps; ++s) {
    const uint64_t flag = uint64_t(s + 1);
    for (int half = 0; half < 2; ++half) {
      const bool writing = (half == 0) == ping;
      uint64_t* buf = (half == 0) ? a.ab : a.ba;
      const uint64_t salt = 4 + half;
      for (int base = kLL128LinesPerWarp * warpIndex(); base < a.lines; base += kLL128LinesPerWarp * warpCount()) {
        const int lineIndex = base + group;
        uint64_t* line = buf + size_t(lineIndex) * kLL128LineWords;
        const int w0 = lineIndex * kLL128DataWords + 2 * part;  // data word numbers of this lane
        if (writing) {
          ll128Store(line, pattern(s, w0, salt), pattern(s, w0 + 1, salt), flag);
          continue;
        }
        uint64_t v0 = 0, v1 = 0;
        if (!warpSpinUntil([&] { return ll128TryLoad(line, flag, v0, v1); }, a.abortFlag)) {
          atomicAdd32(a.errors, bad + 1);
          return;
        }
        bad += v0 != pattern(s, w0, salt);
        bad += part == kLL128LanesPerLine - 1 ? v1 != flag : v1 != pattern(s, w0 + 1, salt);
      }
    }
  }
  if (bad != 0) atomicAdd32(a.errors, bad);
}

// One warp tries once to read lines[0..3] (group g reads line g) with `flag`; counts in
// `accepted` the lanes that were told the lines are complete (32 or 0: the verdict is the warp's).
ACCL_SIMT_FN void ll128TryOnceKernel(const uint64_t* lines, uint64_t flag, uint32_t* accepted) {
  uint64_t v0, v1;
  const uint64_t* line = lines + size_t(laneId() / kLL128LanesPerLine) * kLL128LineWords;
  if (ll128TryLoad(line, flag, v0, v1)) atomicAdd32(accepted, 1);
}

// One warp reads the line groups of `pending` (group u: lines 4u..4u+3 of `lines`, lane l takes
// line 4u + l / 8) with one ll128TryLoadLines<4>. Lane l writes the bits it was told are late to
// late[l] and its words of group u to words[(4 l + u) * 2] and [+ 1]; a group it did not ask for
// keeps the marker kNotLoaded.
constexpr uint64_t kNotLoaded = 0xdeadbeefull;
ACCL_SIMT_FN void ll128TryLinesOnceKernel(const uint64_t* lines, uint64_t flag, unsigned pending, unsigned* late,
                                          uint64_t* words) {
  Vec16 v[4];
  for (Vec16& x : v) x = Vec16{kNotLoaded, kNotLoaded};
  const int lane = laneId();
  const uint64_t* line = lines + size_t(lane / kLL128LanesPerLine) * kLL128LineWords;
  late[lane] = ll128TryLoadLines(line, kLL128LinesPerWarp * kLL128LineWords, flag, pending, v);
  for (int u = 0; u < 4; ++u) {
    words[(4 * lane + u) * 2] = v[u].lo;
    words[(4 * lane + u) * 2 + 1] = v[u].hi;
  }
}

// ---- the remaining primitives, once each ---------------------------------------------------------

struct SmokeArgs {
  uint64_t* counter;  // storeRelease / loadAcquire at GPU scope, then atomicAdd64 by every thread
  uint32_t* word;     // storeVolatile32 by thread 0
  uint32_t* errors;
};

// Block-wide: thread 0 publishes at GPU scope, the block reads it back after a barrier; float
// shuffles; every thread adds 1 to the counter. Expect *counter == 41 + blockSize(), *word == 7.
ACCL_SIMT_FN void smokeKernel(SmokeArgs a) {
  uint32_t bad = 0;
  if (threadIndex() == 0) {
    storeVolatile32(a.word, 7);
    fence<Scope::kGpu>();
    storeRelease<Scope::kGpu>(a.counter, 41);
  }
  syncBlock();
  bad += loadAcquire<Scope::kGpu>(a.counter) != 41;
  bad += loadVolatile32(a.word) != 7;
  syncBlock();
  // Block-wide OR at a barrier: uniform verdicts; a 64-thread named barrier (the whole block here).
  bad += !syncBlockOr(threadIndex() == blockSize() - 1);
  bad += syncBlockOr(false);
  bad += !barSyncOr(5, blockSize(), threadIndex() == 0);
  bad += barSyncOr(5, blockSize(), false);
  float f = shfl(float(laneId()) * 0.25f, 3);
  bad += f != 0.75f;
  float x = shflXor(float(laneId()), 1);
  bad += x != float(laneId() ^ 1);
  atomicAdd64(a.counter, 1);
  if (bad != 0) atomicAdd32(a.errors, bad);
}

}  // namespace accl::simttest
