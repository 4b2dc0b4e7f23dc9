// A kernel compiled by nvcc that the virtual GPU does not know (foreign_kernel.cu).
#pragma once

#include <cuda_runtime_api.h>

cudaError_t launchForeignKernel(int* out, cudaStream_t stream);
