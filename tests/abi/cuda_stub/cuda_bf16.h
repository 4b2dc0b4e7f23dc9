/* Empty stand-in for <cuda_bf16.h>: nccl.h includes it but the ABI tables need nothing from it
 * (see cuda_runtime.h in this directory). */
