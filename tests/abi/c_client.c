/* A plain C99 client: compiled against NVIDIA's nccl.h (when the build found it, else ours) and
 * linked against our libnccl.so. It exercises the calls every client makes first and exits 0
 * only if each returns what NCCL 2.28.9 would. */
#ifdef ACCL_CLIENT_NCCL_H
#include ACCL_CLIENT_NCCL_H
#else
#include <nccl.h>
#endif

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "c_client: %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define EXPECT_RESULT(call, want)                                              \
  do {                                                                         \
    ncclResult_t got_ = (call);                                                \
    if (got_ != (want)) {                                                      \
      fprintf(stderr, "c_client: %s:%d: %s returned %d (%s), expected %d; last error: %s\n", \
              __FILE__, __LINE__, #call, (int)got_, ncclGetErrorString(got_), (int)(want), \
              ncclGetLastError(NULL));                                         \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(void) {
  int version = 0;
  int code;
  int count = -1, rank = -1;
  ncclUniqueId id;
  ncclComm_t comm = NCCL_COMM_NULL;
  ncclComm_t bad = NCCL_COMM_NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;

  EXPECT_RESULT(ncclGetVersion(&version), ncclSuccess);
  EXPECT(version == NCCL_VERSION_CODE);
  EXPECT(version == 22809);
  EXPECT_RESULT(ncclGetVersion(NULL), ncclInvalidArgument);

  /* Every code, and one past the end, has a non-empty text; known codes have distinct texts. */
  for (code = ncclSuccess; code <= ncclNumResults; ++code) {
    const char* s = ncclGetErrorString((ncclResult_t)code);
    EXPECT(s != NULL && s[0] != '\0');
    if (s != NULL && code > ncclSuccess && code < ncclNumResults) {
      EXPECT(strcmp(s, ncclGetErrorString((ncclResult_t)(code - 1))) != 0);
    }
  }
  EXPECT(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  EXPECT(strcmp(ncclGetErrorString(ncclInProgress), "NCCL operation in progress") == 0);

  memset(&id, 0, sizeof(id));
  EXPECT_RESULT(ncclGetUniqueId(&id), ncclSuccess);

  /* A rank outside [0, nranks) is rejected and leaves a message behind. */
  EXPECT_RESULT(ncclCommInitRank(&bad, 1, id, 1), ncclInvalidArgument);
  EXPECT(ncclGetLastError(NULL) != NULL && ncclGetLastError(NULL)[0] != '\0');

  EXPECT_RESULT(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  EXPECT(comm != NCCL_COMM_NULL);
  if (comm != NCCL_COMM_NULL) {
    EXPECT_RESULT(ncclCommCount(comm, &count), ncclSuccess);
    EXPECT(count == 1);
    EXPECT_RESULT(ncclCommUserRank(comm, &rank), ncclSuccess);
    EXPECT(rank == 0);
    EXPECT_RESULT(ncclCommDestroy(comm), ncclSuccess);
  }

  /* A config built by the C initializer of the header this file was compiled with. */
  comm = NCCL_COMM_NULL;
  config.blocking = 1;
  config.commName = "c_client";
  EXPECT_RESULT(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_RESULT(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclSuccess);
  if (comm != NCCL_COMM_NULL) {
    EXPECT_RESULT(ncclCommCount(comm, &count), ncclSuccess);
    EXPECT(count == 1);
    EXPECT_RESULT(ncclCommDestroy(comm), ncclSuccess);
  }

  if (failures != 0) {
    fprintf(stderr, "c_client: %d check(s) failed\n", failures);
    return 1;
  }
  printf("c_client: all checks passed (library version %d)\n", version);
  return 0;
}
