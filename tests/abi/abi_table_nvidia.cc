// ABI table of NVIDIA's nccl.h. The header is named by absolute path (ACCL_NVIDIA_NCCL_H, set by
// CMake) so that our include/nccl.h, which has the same include guard, can never be picked up.
#ifdef ACCL_NVIDIA_NCCL_H
#include ACCL_NVIDIA_NCCL_H
#define ACCL_ABI_TABLE_FN nvidiaAbiTable
#include "abi_table_body.inc"
#else
#include "abi_table.h"
accl::abi::Table accl::abi::nvidiaAbiTable() { return {}; }
#endif
