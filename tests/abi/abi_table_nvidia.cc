// ABI table of NVIDIA's nccl.h (2.32.3, the ABI accl exports). The header is named by absolute
// path (ACCL_NVIDIA_NCCL_H, set by CMake) so that our include/nccl.h, which has the same include
// guard, can never be picked up. NVIDIA's header declares ncclResetDebugInit only when
// NCCL_OS_LINUX is defined (elsewhere it is an empty macro), so this file defines it, as NCCL's
// own Linux build does.
#ifdef ACCL_NVIDIA_NCCL_H
#ifndef NCCL_OS_LINUX
#define NCCL_OS_LINUX 1
#endif
#include ACCL_NVIDIA_NCCL_H
#define ACCL_ABI_TABLE_FN nvidiaAbiTable
#include "abi_table_body.inc"
#else
#include "abi_table.h"
accl::abi::Table accl::abi::nvidiaAbiTable() { return {}; }
#endif
