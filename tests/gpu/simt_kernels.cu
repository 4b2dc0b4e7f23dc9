// The device-primitives layer (src/device/simt) under nvcc: every kernel of
// tests/simt/simt_test_kernels.h wrapped in a __global__ function. Building this file (CI, sm_90)
// proves the PTX side of the layer compiles; running it (simt_gpu_test, label gpu) checks it on
// the device with the same kernels and expectations as the CPU harness test.
#include <cuda_runtime.h>

#include <vector>

#include "gpu_test_util.h"
#include "simt_kernels.h"
#include "simt_test_kernels.h"

namespace accl::simttest {
namespace {

__global__ void indicesGlobal(int* out) { indicesKernel(out); }
__global__ void warpOpsGlobal(uint32_t* errors, int iterations) { warpOpsKernel(errors, iterations); }
__global__ void namedBarrierGlobal(uint32_t* errors, int iterations) { namedBarrierKernel(errors, iterations); }
__global__ void vectorCopyGlobal(const void* src, void* dst, size_t vectors, bool useVolatile) {
  vectorCopyKernel(src, dst, vectors, useVolatile);
}
__global__ void handoffGlobal(HandoffArgs a) { counterHandoffKernel(a); }
__global__ void llPingPongGlobal(LLPingPongArgs a) { llPingPongKernel(a); }
__global__ void ll128PingPongGlobal(LL128PingPongArgs a) { ll128PingPongKernel(a); }
__global__ void ll128TryOnceGlobal(const uint64_t* lines, uint64_t flag, uint32_t* accepted) {
  ll128TryOnceKernel(lines, flag, accepted);
}
__global__ void ll128TryLinesOnceGlobal(const uint64_t* lines, uint64_t flag, unsigned pending, unsigned* late,
                                        uint64_t* words) {
  ll128TryLinesOnceKernel(lines, flag, pending, late, words);
}
__global__ void smokeGlobal(SmokeArgs a) { smokeKernel(a); }

using gputest::AbortFlag;
using gputest::DeviceBuffer;

bool finishOrAbort(AbortFlag& abort, SimtGpuOutcome& out) {
  out.detail = gputest::finishOrAbort(abort);
  return out.detail.empty();
}

uint32_t readErrors(const DeviceBuffer& errors) {
  uint32_t n = 0;
  cudaMemcpy(&n, errors.ptr, sizeof n, cudaMemcpyDeviceToHost);
  return n;
}

}  // namespace

SimtGpuOutcome runSimtCheckOnDevice(SimtGpuCheck check) {
  SimtGpuOutcome out;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return out;
  out.ran = true;
  AbortFlag hostAbort;
  if (!hostAbort.ok()) {
    out.detail = "cudaHostAlloc (mapped abort flag) failed";
    return out;
  }
  uint32_t* devAbort = hostAbort.device;
  DeviceBuffer errors(sizeof(uint32_t));
  switch (check) {
    case SimtGpuCheck::kIndices: {
      const int blocks = 3, threads = 64;
      DeviceBuffer d(sizeof(int) * blocks * threads * kIndexFields);
      indicesGlobal<<<blocks, threads>>>(d.as<int>());
      if (!finishOrAbort(hostAbort, out)) break;
      std::vector<int> h(blocks * threads * kIndexFields);
      cudaMemcpy(h.data(), d.ptr, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
      for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < threads; ++t) {
          const int* o = &h[(b * threads + t) * kIndexFields];
          const int want[kIndexFields] = {b, t, t % 32, t / 32, threads / 32, threads, blocks};
          for (int f = 0; f < kIndexFields; ++f) out.errors += o[f] != want[f];
        }
      break;
    }
    case SimtGpuCheck::kWarpOps:
      warpOpsGlobal<<<2, 64>>>(errors.as<uint32_t>(), 40);
      if (finishOrAbort(hostAbort, out)) out.errors = readErrors(errors);
      break;
    case SimtGpuCheck::kNamedBarriers:
      namedBarrierGlobal<<<2, kNamedBarrierBlock, kNamedBarrierShared>>>(errors.as<uint32_t>(), 60);
      if (finishOrAbort(hostAbort, out)) out.errors = readErrors(errors);
      break;
    case SimtGpuCheck::kVectorCopy: {
      const size_t vectors = 4099;
      std::vector<uint64_t> h(2 * vectors), back(2 * vectors);
      for (size_t i = 0; i < h.size(); ++i) h[i] = pattern(0, i, 9);
      DeviceBuffer src(h.size() * 8), dst(h.size() * 8);
      cudaMemcpy(src.ptr, h.data(), h.size() * 8, cudaMemcpyHostToDevice);
      for (bool useVolatile : {false, true}) {
        cudaMemset(dst.ptr, 0, h.size() * 8);
        vectorCopyGlobal<<<2, 64>>>(src.ptr, dst.ptr, vectors, useVolatile);
        if (!finishOrAbort(hostAbort, out)) break;
        cudaMemcpy(back.data(), dst.ptr, h.size() * 8, cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < h.size(); ++i) out.errors += back[i] != h[i];
      }
      break;
    }
    case SimtGpuCheck::kHandoff: {
      const int slotWords = 2 * 64 * 3 + 6, steps = 2000;
      DeviceBuffer slots(size_t(kHandoffSlots) * slotWords * 8), counters(2 * sizeof(uint64_t));
      uint64_t* c = counters.as<uint64_t>();
      handoffGlobal<<<2, 64, sizeof(int)>>>(
          HandoffArgs{slots.as<uint64_t>(), slotWords, c, c + 1, steps, errors.as<uint32_t>(), devAbort});
      if (!finishOrAbort(hostAbort, out)) break;
      uint64_t h[2];
      cudaMemcpy(h, c, sizeof h, cudaMemcpyDeviceToHost);
      out.errors = readErrors(errors) + (h[0] != uint64_t(steps)) + (h[1] != uint64_t(steps));
      break;
    }
    case SimtGpuCheck::kLLWord:
    case SimtGpuCheck::kLLLine: {
      const bool lines = check == SimtGpuCheck::kLLLine;
      const int words = lines ? 2 * (64 + 3) : 2 * 64 + 5, steps = 2000;
      DeviceBuffer ab(words * 8), ba(words * 8);
      llPingPongGlobal<<<2, 64>>>(
          LLPingPongArgs{ab.as<uint64_t>(), ba.as<uint64_t>(), words, steps, lines, errors.as<uint32_t>(), devAbort});
      if (finishOrAbort(hostAbort, out)) out.errors = readErrors(errors);
      break;
    }
    case SimtGpuCheck::kLL128: {
      const int lines = 4 * 2 * 3, steps = 2000;
      DeviceBuffer ab(size_t(lines) * kLL128LineBytes), ba(size_t(lines) * kLL128LineBytes);
      ll128PingPongGlobal<<<2, 64>>>(
          LL128PingPongArgs{ab.as<uint64_t>(), ba.as<uint64_t>(), lines, steps, errors.as<uint32_t>(), devAbort});
      if (!finishOrAbort(hostAbort, out)) break;
      out.errors = readErrors(errors);
      // A stale flag on one of the warp's four lines: the warp must refuse them all.
      std::vector<uint64_t> h(4 * kLL128LineWords, 7);
      h[3 * kLL128LineWords + kLL128FlagWord] = 6;
      DeviceBuffer line(h.size() * 8), accepted(sizeof(uint32_t));
      cudaMemcpy(line.ptr, h.data(), h.size() * 8, cudaMemcpyHostToDevice);
      ll128TryOnceGlobal<<<1, 32>>>(line.as<uint64_t>(), 7, accepted.as<uint32_t>());
      if (!finishOrAbort(hostAbort, out)) break;
      out.errors += readErrors(accepted);
      // Four groups at once (16 lines): step 8 reached groups 0 and 1 whole, three lines of
      // group 2, nothing of group 3; every lane must be told groups 2 and 3 are late (0xc).
      std::vector<uint64_t> g(16 * kLL128LineWords, 7);
      for (int l = 0; l < 11; ++l) g[l * kLL128LineWords + kLL128FlagWord] = 8;
      DeviceBuffer groups(g.size() * 8), late(32 * sizeof(unsigned)), words(32 * 4 * 2 * 8);
      cudaMemcpy(groups.ptr, g.data(), g.size() * 8, cudaMemcpyHostToDevice);
      ll128TryLinesOnceGlobal<<<1, 32>>>(groups.as<uint64_t>(), 8, 0xfu, late.as<unsigned>(), words.as<uint64_t>());
      if (!finishOrAbort(hostAbort, out)) break;
      std::vector<unsigned> lateBits(32);
      cudaMemcpy(lateBits.data(), late.ptr, lateBits.size() * sizeof(unsigned), cudaMemcpyDeviceToHost);
      for (unsigned bits : lateBits) out.errors += bits != 0xcu;
      break;
    }
    case SimtGpuCheck::kSmoke: {
      DeviceBuffer counter(sizeof(uint64_t)), word(sizeof(uint32_t));
      smokeGlobal<<<1, 64>>>(SmokeArgs{counter.as<uint64_t>(), word.as<uint32_t>(), errors.as<uint32_t>()});
      if (!finishOrAbort(hostAbort, out)) break;
      uint64_t c = 0;
      cudaMemcpy(&c, counter.ptr, sizeof c, cudaMemcpyDeviceToHost);
      out.errors = readErrors(errors) + (c != 41u + 64u);
      break;
    }
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess && out.detail.empty()) out.detail = cudaGetErrorString(e);
  return out;
}

}  // namespace accl::simttest
