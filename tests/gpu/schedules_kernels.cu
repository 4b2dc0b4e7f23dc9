// Every schedule of src/algos instantiated in a CUDA kernel over CountingPrims: building this
// file proves the shared schedules compile under nvcc; running it (label gpu) shows the device
// takes exactly the steps the host takes.
#include <cuda_runtime.h>

#include "schedules_kernels.h"

namespace accl {
namespace {

__global__ void scheduleKernel(ScheduleKind kind, int nranks, int index, TreeView tree, CollWork work,
                               PrimsCounts* out) {
  int ranks[kMaxRanksInView];
  for (int i = 0; i < nranks; ++i) ranks[i] = i;
  RingView ring{nranks, index, ranks};
  PrimsCounts c = countSchedule(kind, ring, tree, work);
  *out = c;
}

}  // namespace

bool runScheduleOnDevice(ScheduleKind kind, int nranks, int index, const TreeView& tree, const CollWork& work,
                         PrimsCounts* out) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0 || nranks > 256) return false;
  PrimsCounts* d = nullptr;
  if (cudaMalloc(&d, sizeof(PrimsCounts)) != cudaSuccess) return false;
  scheduleKernel<<<1, 1>>>(kind, nranks, index, tree, work, d);
  bool ok = cudaMemcpy(out, d, sizeof(PrimsCounts), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(d);
  return ok;
}

}  // namespace accl
