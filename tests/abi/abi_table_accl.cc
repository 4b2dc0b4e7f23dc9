// ABI table of our include/nccl.h, named by absolute path (ACCL_OUR_NCCL_H). CMake compiles this
// file twice: with the CUDA include directory (ACCL_ABI_TABLE_FN=acclAbiTableWithCuda) and with
// -DACCL_NO_CUDA_HEADERS (ACCL_ABI_TABLE_FN=acclAbiTableNoCuda).
#include ACCL_OUR_NCCL_H
#include "abi_table_body.inc"

#ifndef ACCL_NO_CUDA_HEADERS
bool accl::abi::acclWithCudaSawCudaHeaders() {
#ifdef ACCL_HAVE_CUDA_HEADERS
  return true;
#else
  return false;
#endif
}
#endif
