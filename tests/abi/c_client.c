/* A plain C99 client, linked against our libnccl.so and run on the host backend. CMake builds it
 * twice:
 *   accl_abi_c_client       with NVIDIA's 2.28.9 nccl.h (ours when absent): an older client;
 *   accl_abi_c_client_2323  with NVIDIA's 2.32.3 nccl.h (ours when absent), run with
 *                           LD_BIND_NOW=1: it holds the address of every function the header
 *                           declares, so one missing symbol stops it at load.
 * Both check the first calls every client makes, create communicators (one rank; three with
 * ncclCommInitAll; two grouped ncclCommInitRankConfig with the header's config) and check
 * all-reduce results. The 2.32 build also runs ncclAllReduceConfig with
 * NCCL_COLLCONFIG_INITIALIZER, and passes a config laid out as 2.28.9's (80 bytes) to show that
 * older configs keep working. Exits 0 only if every check passed. */
#ifdef ACCL_CLIENT_NCCL_H
#include ACCL_CLIENT_NCCL_H
#else
#include <nccl.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIBRARY_VERSION 23203 /* the ABI our library exports */
#define NRANKS 3
#define COUNT 7 /* odd on purpose */

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

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
/* Every function of the 2.32 header, nccl* and pnccl*. A global array, so its relocations stay in
 * the binary and LD_BIND_NOW resolves each one at load time. */
typedef void (*AnyFunction)(void);
#define BOTH(fn) (AnyFunction)fn, (AnyFunction)p##fn
AnyFunction const acclEveryFunction[] = {
    BOTH(ncclMemAlloc), BOTH(ncclMemFree), BOTH(ncclGetVersion), BOTH(ncclGetUniqueId),
    BOTH(ncclCommInitRankConfig), BOTH(ncclCommInitRank), BOTH(ncclCommInitAll), BOTH(ncclCommFinalize),
    BOTH(ncclCommDestroy), BOTH(ncclCommAbort), BOTH(ncclCommRevoke), BOTH(ncclCommSplit), BOTH(ncclCommShrink),
    BOTH(ncclCommGetUniqueId), BOTH(ncclCommGrow), BOTH(ncclCommInitRankScalable), BOTH(ncclGetErrorString),
    BOTH(ncclGetLastError), BOTH(ncclResetDebugInit), BOTH(ncclCommGetAsyncError), BOTH(ncclCommCount),
    BOTH(ncclCommCuDevice), BOTH(ncclCommUserRank), BOTH(ncclCommRegister), BOTH(ncclCommDeregister),
    BOTH(ncclCommSuspend), BOTH(ncclCommResume), BOTH(ncclCommMemStats), BOTH(ncclCommWindowRegister),
    BOTH(ncclCommWindowDeregister), BOTH(ncclWinGetUserPtr), BOTH(ncclRedOpCreatePreMulSum), BOTH(ncclRedOpDestroy),
    BOTH(ncclReduce), BOTH(ncclBcast), BOTH(ncclBroadcast), BOTH(ncclAllReduce), BOTH(ncclReduceScatter),
    BOTH(ncclAllGather), BOTH(ncclAlltoAll), BOTH(ncclGather), BOTH(ncclScatter), BOTH(ncclAllReduceConfig),
    BOTH(ncclBroadcastConfig), BOTH(ncclReduceConfig), BOTH(ncclAllGatherConfig), BOTH(ncclReduceScatterConfig),
    BOTH(ncclAlltoAllConfig), BOTH(ncclGatherConfig), BOTH(ncclScatterConfig), BOTH(ncclSend), BOTH(ncclRecv),
    BOTH(ncclPutSignal), BOTH(ncclSignal), BOTH(ncclWaitSignal), BOTH(ncclGroupStart), BOTH(ncclGroupEnd),
    BOTH(ncclGroupSimulateEnd), BOTH(ncclSetEncryption), BOTH(ncclParamBind), BOTH(ncclParamGetI8),
    BOTH(ncclParamGetI16), BOTH(ncclParamGetI32), BOTH(ncclParamGetI64), BOTH(ncclParamGetU8), BOTH(ncclParamGetU16),
    BOTH(ncclParamGetU32), BOTH(ncclParamGetU64), BOTH(ncclParamGetStr), BOTH(ncclParamGet),
    BOTH(ncclParamGetParameter), BOTH(ncclParamGetAllParameterKeys), BOTH(ncclParamDumpAll),
};
#define EVERY_FUNCTION_COUNT (sizeof(acclEveryFunction) / sizeof(acclEveryFunction[0]))

/* ncclConfig_t as NCCL 2.28.9 laid it out (80 bytes), as an older client passes it. */
struct Config2289 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char* netName;
  int splitShare, trafficClass;
  const char* commName;
  int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
};
#endif

/* Fills rank r's inputs: ints r*100 + i and floats (r+1)/2 * i. */
static void fillInputs(int r, int* ints, float* floats) {
  int i;
  for (i = 0; i < COUNT; ++i) {
    ints[i] = r * 100 + i;
    floats[i] = 0.5f * (float)(r + 1) * (float)i;
  }
}

/* Sum over n ranks: ints n(n-1)/2*100 + n*i, floats n(n+1)/4 * i (exact in float here). */
static void checkSums(int n, const int* ints, const float* floats, const char* what) {
  int i;
  for (i = 0; i < COUNT; ++i) {
    int wantInt = n * (n - 1) / 2 * 100 + n * i;
    float wantFloat = (float)(n * (n + 1)) / 4.0f * (float)i;
    if (ints[i] != wantInt || floats[i] != wantFloat) {
      fprintf(stderr, "c_client: %s: element %d is %d / %g, expected %d / %g\n", what, i, ints[i],
              (double)floats[i], wantInt, (double)wantFloat);
      ++failures;
      return;
    }
  }
}

/* One all-reduce (int32 and float32 sums) over `comms`, all issued from this thread in a group.
 * With `config` set (2.32 headers), the *Config variant is used with it. */
static void allReduceOnce(ncclComm_t* comms, int n, const void* config, const char* what) {
  int ints[NRANKS][COUNT], intsOut[NRANKS][COUNT];
  float floats[NRANKS][COUNT], floatsOut[NRANKS][COUNT];
  int r;
  for (r = 0; r < n; ++r) fillInputs(r, ints[r], floats[r]);
  memset(intsOut, 0xff, sizeof(intsOut));
  memset(floatsOut, 0xff, sizeof(floatsOut));
  EXPECT_RESULT(ncclGroupStart(), ncclSuccess);
  for (r = 0; r < n; ++r) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
    if (config != NULL) {
      const ncclCollConfig_t* cc = (const ncclCollConfig_t*)config;
      EXPECT_RESULT(ncclAllReduceConfig(ints[r], intsOut[r], COUNT, ncclInt32, ncclSum, comms[r], NULL, cc),
                    ncclSuccess);
      /* in place */
      EXPECT_RESULT(ncclAllReduceConfig(floats[r], floats[r], COUNT, ncclFloat32, ncclSum, comms[r], NULL, cc),
                    ncclSuccess);
      continue;
    }
#else
    (void)config;
#endif
    EXPECT_RESULT(ncclAllReduce(ints[r], intsOut[r], COUNT, ncclInt32, ncclSum, comms[r], NULL), ncclSuccess);
    EXPECT_RESULT(ncclAllReduce(floats[r], floatsOut[r], COUNT, ncclFloat32, ncclSum, comms[r], NULL), ncclSuccess);
  }
  EXPECT_RESULT(ncclGroupEnd(), ncclSuccess);
  for (r = 0; r < n; ++r) checkSums(n, intsOut[r], config != NULL ? floats[r] : floatsOut[r], what);
}

static void checkIdentity(ncclComm_t comm, int wantCount, int wantRank) {
  int count = -1, rank = -1;
  EXPECT_RESULT(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT(count == wantCount);
  EXPECT_RESULT(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT(rank == wantRank);
}

int main(void) {
  int version = 0;
  int code, r;
  ncclUniqueId id;
  ncclComm_t comm = NCCL_COMM_NULL;
  ncclComm_t bad = NCCL_COMM_NULL;
  ncclComm_t comms[NRANKS];
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclConfig_t configs[2] = {NCCL_CONFIG_INITIALIZER, NCCL_CONFIG_INITIALIZER};

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
  for (r = 0; r < (int)EVERY_FUNCTION_COUNT; ++r) EXPECT(acclEveryFunction[r] != NULL);
  EXPECT(EVERY_FUNCTION_COUNT == 146); /* 73 functions and their twins */
#endif

  /* The library reports the version whose ABI it exports, never older than the header's. */
  EXPECT_RESULT(ncclGetVersion(&version), ncclSuccess);
  EXPECT(version == LIBRARY_VERSION);
  EXPECT(version >= NCCL_VERSION_CODE);
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
    checkIdentity(comm, 1, 0);
    EXPECT_RESULT(ncclCommDestroy(comm), ncclSuccess);
  }

  /* A config built by the C initializer of the header this file was compiled with. */
  comm = NCCL_COMM_NULL;
  config.blocking = 1;
  config.commName = "c_client";
  EXPECT_RESULT(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_RESULT(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclSuccess);
  if (comm != NCCL_COMM_NULL) {
    checkIdentity(comm, 1, 0);
    EXPECT_RESULT(ncclCommDestroy(comm), ncclSuccess);
  }

  /* Three ranks from one call, all-reduce across them. */
  memset(comms, 0, sizeof(comms));
  EXPECT_RESULT(ncclCommInitAll(comms, NRANKS, NULL), ncclSuccess);
  if (comms[NRANKS - 1] != NCCL_COMM_NULL) {
    for (r = 0; r < NRANKS; ++r) checkIdentity(comms[r], NRANKS, r);
    allReduceOnce(comms, NRANKS, NULL, "ncclAllReduce over 3 ranks");
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
    {
      ncclCollConfig_t cc = NCCL_COLLCONFIG_INITIALIZER;
      allReduceOnce(comms, NRANKS, &cc, "ncclAllReduceConfig(NCCL_COLLCONFIG_INITIALIZER) over 3 ranks");
      cc.maxCTAs = 1;
      cc.userProfilerTag = 42;
      allReduceOnce(comms, NRANKS, &cc, "ncclAllReduceConfig(maxCTAs 1, profiler tag) over 3 ranks");
    }
#endif
    for (r = 0; r < NRANKS; ++r) EXPECT_RESULT(ncclCommDestroy(comms[r]), ncclSuccess);
  }

  /* Two ranks from ncclCommInitRankConfig with the header's config, grouped in this thread. */
  memset(comms, 0, sizeof(comms));
  EXPECT_RESULT(ncclGetUniqueId(&id), ncclSuccess);
  for (r = 0; r < 2; ++r) {
    configs[r].blocking = 1;
    configs[r].commName = "c_client_pair";
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
    configs[r].hostCftMode = ncclHostCftDisable;      /* accepted; the host backend has no CFT */
    configs[r].nvlsHostMode = ncclNvlsHostModeDisable; /* accepted; the host backend has no NVLS */
#endif
  }
  EXPECT_RESULT(ncclGroupStart(), ncclSuccess);
  for (r = 0; r < 2; ++r) EXPECT_RESULT(ncclCommInitRankConfig(&comms[r], 2, id, r, &configs[r]), ncclSuccess);
  EXPECT_RESULT(ncclGroupEnd(), ncclSuccess);
  if (comms[0] != NCCL_COMM_NULL && comms[1] != NCCL_COMM_NULL) {
    for (r = 0; r < 2; ++r) checkIdentity(comms[r], 2, r);
    allReduceOnce(comms, 2, NULL, "ncclAllReduce over 2 ranks made with ncclCommInitRankConfig");
    for (r = 0; r < 2; ++r) EXPECT_RESULT(ncclCommDestroy(comms[r]), ncclSuccess);
  }

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 32, 0)
  /* A config as a 2.28.9 client lays it out, in a block of exactly its 80 bytes. */
  {
    struct Config2289* old = (struct Config2289*)malloc(sizeof(struct Config2289));
    EXPECT(sizeof(struct Config2289) == 80);
    if (old != NULL) {
      memcpy(old, &config, sizeof(*old)); /* the 2.28 fields of a 2.32 initializer ... */
      old->size = sizeof(*old);           /* ... with 2.28.9's size and version */
      old->version = 22809;
      old->commName = "c_client_2289_config";
      comm = NCCL_COMM_NULL;
      EXPECT_RESULT(ncclGetUniqueId(&id), ncclSuccess);
      EXPECT_RESULT(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)old), ncclSuccess);
      if (comm != NCCL_COMM_NULL) {
        checkIdentity(comm, 1, 0);
        EXPECT_RESULT(ncclCommDestroy(comm), ncclSuccess);
      }
      free(old);
    }
  }
#endif

  if (failures != 0) {
    fprintf(stderr, "c_client: %d check(s) failed\n", failures);
    return 1;
  }
  printf("c_client (header %d): all checks passed (library version %d)\n", NCCL_VERSION_CODE, version);
  return 0;
}
