// The communicator kernel: one launch per communicator per group, one block per channel; block c
// runs channel c's items (channel_body.h) through the device function table defined here. Also
// the host helpers of kernel_launch.h. Errors and aborts go to the communicator's error word
// (DevComm), which the host reads for ncclCommGetAsyncError.
#include <mutex>

#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/kernels/channel_body.h"

namespace accl {

// Entry id: the function of DevFuncId id, null when this build has no kernel for it. Filled once
// per device by acclInitKernelTable.
__device__ DevFn gDevFuncTable[kDevNumFuncs];

namespace {

__global__ void fillTableKernel() {
  for (int i = 0; i < kDevNumFuncs; ++i) gDevFuncTable[i] = nullptr;
  devFillGroup0(gDevFuncTable);
  devFillGroup1(gDevFuncTable);
  devFillGroup2(gDevFuncTable);
  devFillGroup3(gDevFuncTable);
  devFillGroup4(gDevFuncTable);
  devFillGroup5(gDevFuncTable);
  devFillGroup6(gDevFuncTable);
  devFillGroup7(gDevFuncTable);
  devFillGroup8(gDevFuncTable);
  devFillGroup9(gDevFuncTable);
  devFillGroup10(gDevFuncTable);
  devFillGroup11(gDevFuncTable);
  devFillGroup12(gDevFuncTable);
  devFillGroup13(gDevFuncTable);
  devFillGroup14(gDevFuncTable);
  devFillGroup15(gDevFuncTable);
  devFillGroup16(gDevFuncTable);
  devFillGroup17(gDevFuncTable);
  devFillGroup18(gDevFuncTable);
  devFillGroup19(gDevFuncTable);
  devFillGroup20(gDevFuncTable);
}

__global__ void __launch_bounds__(kKernelThreads) commKernel(const __grid_constant__ KernelArgs args) {
  devRunChannel(args.header, args.itemBase(), *static_cast<const DevComm*>(args.header.comm), blockIdx.x,
                gDevFuncTable);
}

}  // namespace

cudaError_t acclInitKernelTable() {
  // Once per device and process: the table is a __device__ variable of this module.
  static std::mutex mutex;
  static bool done[256] = {};
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mutex);
  if (dev >= 0 && dev < 256 && done[dev]) return cudaSuccess;
  // On a private non-blocking stream, waited for alone: the legacy stream or a device
  // synchronisation would also wait for kernels of other communicators on this device, which may
  // be waiting for this thread (several ranks per GPU; issue 18 fault 5).
  cudaStream_t stream = nullptr;
  err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) return err;
  fillTableKernel<<<1, 1, 0, stream>>>();
  err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  if (err == cudaSuccess && dev >= 0 && dev < 256) done[dev] = true;
  return err;
}

cudaError_t acclKernelBlocksPerSm(int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, commKernel, kKernelThreads, 0);
}

cudaError_t acclLaunchKernel(const KernelArgs& args, cudaStream_t stream) {
  commKernel<<<args.header.nChannels, kKernelThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

const char* acclKernelArchitectures() { return ACCL_KERNEL_ARCHS_TEXT; }

}  // namespace accl
