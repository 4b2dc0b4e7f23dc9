// Ring all-reduce (sum) of the closed-form inputs of prims_test_net.h on the CPU SIMT harness,
// checked element by element and on guard elements past the end: shared by the ring, LL128 and
// weak-memory Prims tests (a ScopedWeakMemory around the call runs it in weak-memory mode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algos/ring_all_reduce.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"

namespace accl::primstest {

// Runs ring all-reduce (sum) on `nranks` blocks of `blockDim` threads with CudaPrims<T, RedSum,
// kPeers, kPeers> (the default, three, keeps one LL128 group per pass; one, a GPU ring's, several),
// `repeats` times over the same connections; LL128 slots of `ll128SlotLines` lines, steps of at
// most `chunkElems` elements (0: a slot's capacity). Returns "" or what went wrong.
template <class T, int kPeers = kMaxTreeChildren>
std::string runRingAllReduce(int nranks, ProtoId proto, size_t count, bool inPlace, int repeats = 1,
                             int blockDim = 64, size_t ll128SlotLines = TestConnection::kLL128SlotLines,
                             size_t chunkElems = 0) {
  TestNet net(nranks, ll128SlotLines);
  const size_t guard = 5;
  std::vector<std::vector<T>> in(nranks), out(nranks);
  std::vector<int> userRanks(nranks);
  for (int r = 0; r < nranks; ++r) userRanks[r] = r;
  const size_t chunk = chunkElems > 0 ? chunkElems : primsChunkCapacity(*net.sendEnd(0, 0), proto, sizeof(T));
  uint32_t aborted = 0;

  for (int rep = 0; rep < repeats; ++rep) {
    for (int r = 0; r < nranks; ++r) {
      in[r].resize(count + guard);
      for (size_t i = 0; i < count + guard; ++i) in[r][i] = contribution<T>(r, i);
      out[r].assign(count + guard, T(77));
    }
    std::string err = net.launch([&] {
      const int r = simt::blockIndex();
      CudaPrimsArgs args = net.ringArgs(r, in[r].data(), inPlace ? in[r].data() : out[r].data(), proto);
      CudaPrims<T, RedSum<T>, kPeers, kPeers> prims(args, RedSum<T>{});
      RingView ring{nranks, r, userRanks.data()};
      CollWork work{};
      work.chanOffset = 0;
      work.chanCount = count;
      work.chunkElems = chunk;
      ringAllReduce(prims, ring, work);
      if (prims.aborted()) simt::atomicAdd32(&aborted, 1);
    }, blockDim);
    if (!err.empty()) return err;
    if (aborted) return "a block reported an abort";
    for (int r = 0; r < nranks; ++r) {
      const std::vector<T>& result = inPlace ? in[r] : out[r];
      for (size_t i = 0; i < count; ++i)
        if (!(result[i] == closedFormSum<T>(nranks, i)))
          return "rank " + std::to_string(r) + " element " + std::to_string(i) + " = " +
                 std::to_string(double(result[i])) + ", expected " +
                 std::to_string(double(closedFormSum<T>(nranks, i)));
      for (size_t i = count; i < count + guard; ++i) {
        const T want = inPlace ? contribution<T>(r, i) : T(77);
        if (!(result[i] == want))
          return "rank " + std::to_string(r) + " guard element " + std::to_string(i) + " overwritten";
      }
    }
  }
  return net.checkSteps();  // both ends of every connection agree on the steps taken
}

}  // namespace accl::primstest
