/* Stand-in for the CUDA runtime header, used only to compile NVIDIA's nccl.h for the ABI tables
 * on machines without the CUDA toolkit. It declares exactly what nccl.h uses from CUDA: the
 * stream and event handle types (pointers to incomplete structs, as CUDA declares them), size_t
 * (nccl.h relies on the CUDA headers for it) and a CUDART_VERSION recent enough for nccl.h's
 * optional includes (whose stand-ins are empty). */
#ifndef ACCL_ABI_CUDA_RUNTIME_STUB_H
#define ACCL_ABI_CUDA_RUNTIME_STUB_H
#include <stddef.h>
#define CUDART_VERSION 12000
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#endif
