// CUDA kernels over the shared element types and reduction functors of src/device/common: every
// element type x every DevRedOp kind through reduceInto/preOpInto/postOpInto, and every
// conversion. Compiling this file (target accl_ops_cuda_compile_check) proves the shared headers
// build under nvcc; red_ops_gpu_test.cc runs the kernels when a device is present.
#include "red_ops_kernels.h"

#include <cuda_runtime.h>

#include <vector>

#include "device/common/dtypes.h"
#include "device/common/red_op_apply.h"
#include "device/common/red_ops.h"

namespace accl::gputest {
namespace {

// One element of a reduction with the ReduceStep bits applied at run time (keeps the number of
// instantiations at one per type x op).
template <class T>
struct ElementStep {
  T* dst;
  const T* a;
  const T* b;
  size_t i;
  unsigned steps;
  template <class Op>
  ACCL_HOST_DEVICE void operator()(const Op& op) const {
    if (steps == kReducePlain) {
      reduceInto(dst + i, a + i, b + i, 1, op);
      return;
    }
    T y = b[i];
    if (steps & kPreOpB) preOpInto(&y, &y, 1, op);
    reduceInto(dst + i, a + i, &y, 1, op);
    if (steps & kPostOp) postOpInto(dst + i, dst + i, 1, op);
  }
};

template <class T>
__global__ void reduceKernel(T* dst, const T* a, const T* b, size_t n, DevRedOp op, unsigned steps, int* bad) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    if (!withRedOpFunctor<T>(op, ElementStep<T>{dst, a, b, i, steps})) *bad = 1;
  }
}

__global__ void convertKernel(const float* in, size_t n, uint16_t* half, uint16_t* bf16, uint8_t* e4m3,
                              uint8_t* e5m2, float* halfToFloat, float* bf16ToFloat, float* e4m3ToFloat,
                              float* e5m2ToFloat) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    half[i] = Half::fromFloat(in[i]).bits;
    bf16[i] = Bf16::fromFloat(in[i]).bits;
    e4m3[i] = Fp8E4M3::fromFloat(in[i]).bits;
    e5m2[i] = Fp8E5M2::fromFloat(in[i]).bits;
  }
  for (size_t p = blockIdx.x * size_t(blockDim.x) + threadIdx.x; p < 65536; p += stride) {
    halfToFloat[p] = Half::fromBits(uint16_t(p)).toFloat();
    bf16ToFloat[p] = Bf16::fromBits(uint16_t(p)).toFloat();
    if (p < 256) {
      e4m3ToFloat[p] = Fp8E4M3::fromBits(uint8_t(p)).toFloat();
      e5m2ToFloat[p] = Fp8E5M2::fromBits(uint8_t(p)).toFloat();
    }
  }
}

std::string cudaText(const char* what, cudaError_t e) { return std::string(what) + ": " + cudaGetErrorString(e); }

#define ACCL_CUDA_TRY(call)                              \
  do {                                                   \
    cudaError_t e_ = (call);                             \
    if (e_ != cudaSuccess) return cudaText(#call, e_);   \
  } while (0)

// Device buffers freed on scope exit.
struct DeviceBuffers {
  std::vector<void*> ptrs;
  ~DeviceBuffers() {
    for (void* p : ptrs) cudaFree(p);
  }
  cudaError_t alloc(void** p, size_t bytes) {
    cudaError_t e = cudaMalloc(p, bytes == 0 ? 1 : bytes);
    if (e == cudaSuccess) ptrs.push_back(*p);
    return e;
  }
};

template <class T>
std::string runReduce(const DevRedOp& opIn, unsigned steps, const void* a, const void* b, void* dst, size_t count) {
  DeviceBuffers mem;
  void *da, *db, *dd, *dscalar;
  int* dbad;
  size_t bytes = count * sizeof(T);
  ACCL_CUDA_TRY(mem.alloc(&da, bytes));
  ACCL_CUDA_TRY(mem.alloc(&db, bytes));
  ACCL_CUDA_TRY(mem.alloc(&dd, bytes));
  ACCL_CUDA_TRY(mem.alloc(&dscalar, sizeof(T)));
  ACCL_CUDA_TRY(mem.alloc(reinterpret_cast<void**>(&dbad), sizeof(int)));
  ACCL_CUDA_TRY(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
  ACCL_CUDA_TRY(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
  ACCL_CUDA_TRY(cudaMemset(dbad, 0, sizeof(int)));
  DevRedOp op = opIn;
  if (op.scalarIsPtr) {
    ACCL_CUDA_TRY(cudaMemcpy(dscalar, reinterpret_cast<const void*>(uintptr_t(op.arg)), sizeof(T),
                             cudaMemcpyHostToDevice));
    op.arg = uint64_t(reinterpret_cast<uintptr_t>(dscalar));
  }
  reduceKernel<T><<<4, 128>>>(static_cast<T*>(dd), static_cast<const T*>(da), static_cast<const T*>(db), count, op,
                              steps, dbad);
  ACCL_CUDA_TRY(cudaGetLastError());
  ACCL_CUDA_TRY(cudaDeviceSynchronize());
  int bad = 0;
  ACCL_CUDA_TRY(cudaMemcpy(&bad, dbad, sizeof(int), cudaMemcpyDeviceToHost));
  if (bad) return "withRedOpFunctor rejected the op on the device";
  ACCL_CUDA_TRY(cudaMemcpy(dst, dd, bytes, cudaMemcpyDeviceToHost));
  return "";
}

}  // namespace

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string deviceReduce(ncclDataType_t type, const DevRedOp& op, unsigned steps, const void* a, const void* b,
                         void* dst, size_t count) {
  return visitDtype(type, std::string("invalid datatype"), [&](auto tag) {
    return runReduce<typename decltype(tag)::Type>(op, steps, a, b, dst, count);
  });
}

std::string deviceConvert(const float* in, size_t n, const DeviceConversions& out) {
  DeviceBuffers mem;
  void *din, *dh, *db, *d4, *d5, *fh, *fb, *f4, *f5;
  ACCL_CUDA_TRY(mem.alloc(&din, n * 4));
  ACCL_CUDA_TRY(mem.alloc(&dh, n * 2));
  ACCL_CUDA_TRY(mem.alloc(&db, n * 2));
  ACCL_CUDA_TRY(mem.alloc(&d4, n));
  ACCL_CUDA_TRY(mem.alloc(&d5, n));
  ACCL_CUDA_TRY(mem.alloc(&fh, 65536 * 4));
  ACCL_CUDA_TRY(mem.alloc(&fb, 65536 * 4));
  ACCL_CUDA_TRY(mem.alloc(&f4, 256 * 4));
  ACCL_CUDA_TRY(mem.alloc(&f5, 256 * 4));
  ACCL_CUDA_TRY(cudaMemcpy(din, in, n * 4, cudaMemcpyHostToDevice));
  convertKernel<<<64, 256>>>(static_cast<const float*>(din), n, static_cast<uint16_t*>(dh), static_cast<uint16_t*>(db),
                             static_cast<uint8_t*>(d4), static_cast<uint8_t*>(d5), static_cast<float*>(fh),
                             static_cast<float*>(fb), static_cast<float*>(f4), static_cast<float*>(f5));
  ACCL_CUDA_TRY(cudaGetLastError());
  ACCL_CUDA_TRY(cudaDeviceSynchronize());
  ACCL_CUDA_TRY(cudaMemcpy(out.half, dh, n * 2, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.bf16, db, n * 2, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.e4m3, d4, n, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.e5m2, d5, n, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.halfToFloat, fh, 65536 * 4, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.bf16ToFloat, fb, 65536 * 4, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.e4m3ToFloat, f4, 256 * 4, cudaMemcpyDeviceToHost));
  ACCL_CUDA_TRY(cudaMemcpy(out.e5m2ToFloat, f5, 256 * 4, cudaMemcpyDeviceToHost));
  return "";
}

}  // namespace accl::gputest
