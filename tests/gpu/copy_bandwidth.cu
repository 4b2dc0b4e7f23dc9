// accl-copy-bw: the device's own copy bandwidth, the yardstick of tests/gpu/device-check.sh.
// Copies one buffer (default 256 MiB) device to device with cudaMemcpyAsync and with a plain
// 16-byte-vector copy kernel, times each copy with CUDA events, keeps the best of N, checks that
// the kernel really copied, and prints ONE parsable line:
//   copy_bandwidth: bytes=268435456 iters=20 memcpy_gbps=2101.3 kernel_gbps=2150.2 best_gbps=2150.2 device="NVIDIA H200"
// GB/s = bytes copied / seconds / 1e9 (the memory moves twice that: one read and one write).
// Usage: accl-copy-bw [--bytes N] [--iters N] [--device N]
// Exit: 0 measured; 1 a CUDA error or a wrong copy; 2 bad usage; 77 no CUDA device is visible.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                                          \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::printf("copy_bandwidth: error: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_),       \
                  __FILE__, __LINE__);                                                            \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

__global__ void fillWords(uint32_t* dst, size_t words) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = (uint32_t)(i * 2654435761u) ^ 0x5bd1e995u;
}

// Grid-stride copy in 16-byte vectors; bytes must be a multiple of 16 (the program's sizes are).
__global__ void copyVectors(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t vectors) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < vectors; i += 4 * stride) {  // four independent loads in flight per thread
    uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < vectors; i += stride) dst[i] = src[i];
}

bool parseArg(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!end || *end || end == text || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int run(size_t bytes, int iters, int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("copy_bandwidth: no CUDA device is visible (cudaGetDeviceCount: %s, %d devices)\n",
                e == cudaSuccess ? "ok" : cudaGetErrorString(e), count);
    return 77;
  }
  if (device >= count) {
    std::printf("copy_bandwidth: --device %d but only %d devices are visible\n", device, count);
    return 2;
  }
  CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  void *src = nullptr, *dst = nullptr;
  CHECK_CUDA(cudaMalloc(&src, bytes));
  CHECK_CUDA(cudaMalloc(&dst, bytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  fillWords<<<prop.multiProcessorCount * 4, 256, 0, stream>>>(static_cast<uint32_t*>(src), bytes / 4);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemsetAsync(dst, 0, bytes, stream));

  float bestMemcpyMs = 1e30f, bestKernelMs = 1e30f, ms = 0;
  for (int i = 0; i < iters + 2; ++i) {  // the first two of each are warm-ups
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 2 && ms < bestMemcpyMs) bestMemcpyMs = ms;
  }
  CHECK_CUDA(cudaMemsetAsync(dst, 0, bytes, stream));
  const int blocks = prop.multiProcessorCount * 8;
  for (int i = 0; i < iters + 2; ++i) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    copyVectors<<<blocks, 512, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 2 && ms < bestKernelMs) bestKernelMs = ms;
  }
  // The kernel's copy must equal the source: compare the first and last MiB (and the middle).
  const size_t probe = bytes < (1u << 20) ? bytes : (1u << 20);
  std::vector<unsigned char> a(probe), b(probe);
  for (size_t offset : {size_t{0}, (bytes / 2) & ~size_t{15}, bytes - probe}) {
    if (offset + probe > bytes) offset = bytes - probe;
    CHECK_CUDA(cudaMemcpy(a.data(), static_cast<char*>(src) + offset, probe, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b.data(), static_cast<char*>(dst) + offset, probe, cudaMemcpyDeviceToHost));
    if (std::memcmp(a.data(), b.data(), probe) != 0) {
      std::printf("copy_bandwidth: error: the copy kernel's output differs from its input at offset %zu\n", offset);
      return 1;
    }
  }
  double memcpyGbps = bytes / (bestMemcpyMs * 1e-3) / 1e9;
  double kernelGbps = bytes / (bestKernelMs * 1e-3) / 1e9;
  std::printf("copy_bandwidth: bytes=%zu iters=%d memcpy_gbps=%.1f kernel_gbps=%.1f best_gbps=%.1f device=\"%s\"\n",
              bytes, iters, memcpyGbps, kernelGbps, memcpyGbps > kernelGbps ? memcpyGbps : kernelGbps, prop.name);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  cudaFree(src);
  cudaFree(dst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  long long bytes = 256ll << 20, iters = 20, device = 0;
  for (int i = 1; i < argc; ++i) {
    long long* target = !std::strcmp(argv[i], "--bytes") ? &bytes
                        : !std::strcmp(argv[i], "--iters") ? &iters
                        : !std::strcmp(argv[i], "--device") ? &device
                                                             : nullptr;
    long long lo = target == &bytes ? 16 : target == &iters ? 1 : 0;
    long long hi = target == &bytes ? (64ll << 30) : 1 << 20;
    if (!target || i + 1 >= argc || !parseArg(argv[i + 1], lo, hi, target) || (target == &bytes && bytes % 16)) {
      std::fprintf(stderr,
                   "usage: %s [--bytes N (16..64Gi, a multiple of 16)] [--iters N] [--device N]; bad or missing: '%s'\n",
                   argv[0], argv[i]);
      return 2;
    }
    ++i;
  }
  return run(static_cast<size_t>(bytes), static_cast<int>(iters), static_cast<int>(device));
}
