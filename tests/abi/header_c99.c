/* Proves include/nccl.h is valid C99, with the CUDA headers and with -DACCL_NO_CUDA_HEADERS
 * (CMake builds this file both ways, warnings as errors), and checks its layout as C sees it. */
#include ACCL_OUR_NCCL_H

#include <stddef.h>
#include <stdio.h>

/* C99 has no _Static_assert: a negative array size fails the build instead. */
#define C99_STATIC_ASSERT(cond, tag) typedef char static_assert_##tag[(cond) ? 1 : -1]

C99_STATIC_ASSERT(sizeof(ncclUniqueId) == 128, unique_id_size);
C99_STATIC_ASSERT(sizeof(ncclConfig_t) == 80, config_size);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, netName) == 32, config_net_name);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, commName) == 48, config_comm_name);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, nvlinkCentricSched) == 76, config_last);
C99_STATIC_ASSERT(sizeof(ncclSimInfo_t) == 24, sim_info_size);
C99_STATIC_ASSERT(sizeof(ncclRedOp_t) == 4, red_op_size);
C99_STATIC_ASSERT(sizeof(cudaStream_t) == sizeof(void*), stream_size);
C99_STATIC_ASSERT(NCCL_VERSION_CODE == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), version_code);

#if defined(ACCL_EXPECT_CUDA_HEADERS) && !defined(ACCL_HAVE_CUDA_HEADERS)
#error "expected nccl.h to include the CUDA runtime headers"
#endif
#if defined(ACCL_NO_CUDA_HEADERS) && defined(ACCL_HAVE_CUDA_HEADERS)
#error "ACCL_NO_CUDA_HEADERS must keep nccl.h away from the CUDA headers"
#endif

int main(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ncclRedOp_t op = ncclMaxRedOp;
  int bad = 0;
  if (config.size != sizeof(ncclConfig_t) || config.magic != 0xcafebeefu || config.version != 22809u) bad = 1;
  if (config.blocking != NCCL_CONFIG_UNDEF_INT || config.netName != NULL) bad = 1;
  if (config.nvlinkCentricSched != NCCL_CONFIG_UNDEF_INT) bad = 1;
  if (sim.magic != 0x74685283u || sim.estimatedTime != NCCL_UNDEF_FLOAT) bad = 1;
  if ((long)op != 0x7fffffffL) bad = 1;
  if (bad) fprintf(stderr, "header_c99: initializer or constant mismatch\n");
  return bad;
}
