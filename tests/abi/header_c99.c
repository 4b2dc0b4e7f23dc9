/* Proves include/nccl.h is valid C99, with the CUDA headers and with -DACCL_NO_CUDA_HEADERS
 * (CMake builds this file both ways, warnings as errors), and checks its layout as C sees it. */
#include ACCL_OUR_NCCL_H

#include <stddef.h>
#include <stdio.h>

/* C99 has no _Static_assert: a negative array size fails the build instead. */
#define C99_STATIC_ASSERT(cond, tag) typedef char static_assert_##tag[(cond) ? 1 : -1]

C99_STATIC_ASSERT(sizeof(ncclUniqueId) == 128, unique_id_size);
C99_STATIC_ASSERT(sizeof(ncclConfig_t) == 120, config_size);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, netName) == 32, config_net_name);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, commName) == 48, config_comm_name);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, nvlinkCentricSched) == 76, config_last_of_2_28);
C99_STATIC_ASSERT(offsetof(ncclConfig_t, nvlsHostMode) == 112, config_last);
C99_STATIC_ASSERT(sizeof(ncclCollConfig_t) == 72, coll_config_size);
C99_STATIC_ASSERT(offsetof(ncclCollConfig_t, userProfilerTag) == 56, coll_config_tag);
C99_STATIC_ASSERT(sizeof(ncclConfigExt_t) == 24, config_ext_size);
C99_STATIC_ASSERT(sizeof(ncclWaitSignalDesc_t) == 16, wait_signal_desc_size);
C99_STATIC_ASSERT(sizeof(ncclEncryptionConfig_t) == 32, encryption_config_size);
C99_STATIC_ASSERT(sizeof(ncclHostCftMode_t) == 4 && sizeof(ncclNvlsHostMode_t) == 4, cft_nvls_enum_size);
C99_STATIC_ASSERT(sizeof(cudaEvent_t) == sizeof(void*), event_size);
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
  ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
  ncclEncryptionConfig_t encryption = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  ncclRedOp_t op = ncclMaxRedOp;
  int bad = 0;
  if (config.size != sizeof(ncclConfig_t) || config.magic != 0xcafebeefu || config.version != 23203u) bad = 1;
  if (config.blocking != NCCL_CONFIG_UNDEF_INT || config.netName != NULL) bad = 1;
  if (config.nvlinkCentricSched != NCCL_CONFIG_UNDEF_INT || config.nvlsHostMode != NCCL_CONFIG_UNDEF_INT) bad = 1;
  if (coll.size != sizeof(ncclCollConfig_t) || coll.magic != NCCL_API_MAGIC || coll.version != 23203u) bad = 1;
  if (coll.ext != NULL || coll.algSelection != NULL || coll.forceAlgSelection != 1 || coll.userProfilerTag != 0)
    bad = 1;
  if (coll.minCTAs != NCCL_CONFIG_UNDEF_INT || coll.launchCompletionEvent != NULL) bad = 1;
  if (encryption.size != sizeof(ncclEncryptionConfig_t) || encryption.mode != NCCL_ENCRYPTION_MODE_NONE) bad = 1;
  if (encryption.psk != NULL) bad = 1;
  if (sim.magic != 0x74685283u || sim.estimatedTime != NCCL_UNDEF_FLOAT) bad = 1;
  if ((long)op != 0x7fffffffL) bad = 1;
  if (bad) fprintf(stderr, "header_c99: initializer or constant mismatch\n");
  return bad;
}
