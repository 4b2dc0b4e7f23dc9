/* A tuner plugin for tuner_plugin_test.cc, written against accl's reading of NCCL's tuner ABI
 * (declared again here so the fixture depends on no header). Built three times by
 * tests/unit/CMakeLists.txt: FIXTURE_VERSION=6 exports ncclTunerPlugin_v6 and, like NCCL 2.32's
 * example tuner, ncclTunerPlugin_v5 too (so the test sees which one is picked);
 * FIXTURE_VERSION=5 only ncclTunerPlugin_v5; FIXTURE_VERSION=2 only ncclTunerPlugin_v2.
 *
 * v5: init checks that the constants it is handed have NCCL's default layout and values (fails
 *     otherwise, or when ACCL_TEST_TUNER_FAIL_INIT is set), then adds 1000 us to Ring/LL's base
 *     latency; getCollInfo forces Tree/LL for AllReduce (cost 0) with 3 channels.
 * v6: the same init; getCollInfo forces Tree/Simple for AllReduce with 7 channels; getChunkSize
 *     raises Tree/Simple chunks to at least 128 KiB and fails for 13-byte collectives.
 * v2: getCollInfo picks Ring/LL for AllReduce with 5 channels.
 * All count init and finalize calls in exported counters the test reads with dlsym. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int result_t; /* ncclResult_t: ncclSuccess 0, ncclInternalError 3 */
#define OK 0
#define INTERNAL_ERROR 3

typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

enum { TREE = 0, RING = 1 };
enum { LL = 0, LL128 = 1, SIMPLE = 2 };
enum { FUNC_ALLREDUCE = 4 };

#define EXPORT __attribute__((visibility("default")))

EXPORT int accl_fixture_init_calls = 0;
EXPORT int accl_fixture_finalize_calls = 0;

static int ctxStorage;

static result_t finalizeCtx(void* ctx) {
  if (ctx != &ctxStorage) return INTERNAL_ERROR;
  accl_fixture_finalize_calls++;
  return OK;
}

#if FIXTURE_VERSION == 5 || FIXTURE_VERSION == 6

typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
} constants_t;

typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} nvl_info_t;

static result_t initV5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t logger, nvl_info_t* nvl,
                       constants_t* constants) {
  (void)commId;
  accl_fixture_init_calls++;
  if (getenv("ACCL_TEST_TUNER_FAIL_INIT")) return INTERNAL_ERROR;
  if (!constants || !nvl || nRanks < 1 || nNodes < 1) return INTERNAL_ERROR;
  /* Spot checks across the struct: Ring/Simple base latency, NET Tree/Simple latency, Hopper's
   * one-node LL ceiling, Blackwell's 4+-node NVLS tree ceiling (the last field). */
  if (constants->baseLatencies[RING][SIMPLE] != 8.4) return INTERNAL_ERROR;
  if (constants->hwLatencies[2][TREE][SIMPLE] != 14.0) return INTERNAL_ERROR;
  if (constants->llMaxBws[2][0] != 141.0) return INTERNAL_ERROR;
  if (constants->perChMaxNVLSTreeBws[3][2] != 43.8) return INTERNAL_ERROR;
  constants->baseLatencies[RING][LL] += 1000.0;
  if (logger) logger(3, 0x40, __FILE__, __LINE__, "fixture tuner v5: init for %zu ranks", nRanks);
  *ctx = &ctxStorage;
  return OK;
}

static result_t getCollInfoV5(void* ctx, int func, size_t nBytes, int numPipeOps, float** costTable, int numAlgo,
                              int numProto, int regBuff, int* nChannels) {
  (void)nBytes; (void)numPipeOps; (void)regBuff;
  if (ctx != &ctxStorage || numAlgo != 7 || numProto != 3) return INTERNAL_ERROR;
  float(*table)[3] = (float(*)[3])costTable;
  if (func == FUNC_ALLREDUCE && table[TREE][LL] >= 0.0f) {
    table[TREE][LL] = 0.0f;
    *nChannels = 3;
  }
  return OK;
}

typedef struct {
  const char* name;
  result_t (*init)(void**, uint64_t, size_t, size_t, logger_t, nvl_info_t*, constants_t*);
  result_t (*getCollInfo)(void*, int, size_t, int, float**, int, int, int, int*);
  result_t (*finalize)(void*);
} tuner_v5_t;

#if FIXTURE_VERSION == 6
#define V5_NAME "fixture-v6-as-v5" /* must never be the one loaded */
#else
#define V5_NAME "fixture-v5"
#endif
EXPORT const tuner_v5_t ncclTunerPlugin_v5 = {V5_NAME, initV5, getCollInfoV5, finalizeCtx};

#if FIXTURE_VERSION == 6

static result_t getCollInfoV6(void* ctx, int func, size_t nBytes, int numPipeOps, float** costTable, int numAlgo,
                              int numProto, int regBuff, int* nChannels) {
  (void)nBytes; (void)numPipeOps; (void)regBuff;
  if (ctx != &ctxStorage || numAlgo != 7 || numProto != 3) return INTERNAL_ERROR;
  float(*table)[3] = (float(*)[3])costTable;
  if (func == FUNC_ALLREDUCE && table[TREE][SIMPLE] >= 0.0f) {
    table[TREE][SIMPLE] = 0.0f;
    *nChannels = 7;
  }
  return OK;
}

static result_t getChunkSizeV6(void* ctx, int func, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize) {
  (void)func; (void)nChannels;
  if (ctx != &ctxStorage || !chunkSize) return INTERNAL_ERROR;
  if (nBytes == 13) return INTERNAL_ERROR;
  if (algo == TREE && proto == SIMPLE && *chunkSize < 131072) *chunkSize = 131072;
  return OK;
}

typedef struct {
  const char* name;
  result_t (*init)(void**, uint64_t, size_t, size_t, logger_t, nvl_info_t*, constants_t*);
  result_t (*getCollInfo)(void*, int, size_t, int, float**, int, int, int, int*);
  result_t (*finalize)(void*);
  result_t (*getChunkSize)(void*, int, size_t, int, int, int, size_t*);
} tuner_v6_t;

EXPORT const tuner_v6_t ncclTunerPlugin_v6 = {"fixture-v6", initV5, getCollInfoV6, finalizeCtx, getChunkSizeV6};

#endif

#elif FIXTURE_VERSION == 2

static result_t initV2(size_t nRanks, size_t nNodes, logger_t logger, void** ctx) {
  (void)nRanks; (void)nNodes; (void)logger;
  accl_fixture_init_calls++;
  *ctx = &ctxStorage;
  return OK;
}

static result_t getCollInfoV2(void* ctx, int func, size_t nBytes, int collNetSupport, int nvlsSupport, int numPipeOps,
                              int* algorithm, int* protocol, int* nChannels) {
  (void)nBytes; (void)collNetSupport; (void)nvlsSupport; (void)numPipeOps;
  if (ctx != &ctxStorage) return INTERNAL_ERROR;
  if (func == FUNC_ALLREDUCE) {
    *algorithm = RING;
    *protocol = LL;
    *nChannels = 5;
  }
  return OK;
}

typedef struct {
  const char* name;
  result_t (*init)(size_t, size_t, logger_t, void**);
  result_t (*getCollInfo)(void*, int, size_t, int, int, int, int*, int*, int*);
  result_t (*destroy)(void*);
} tuner_v2_t;

EXPORT const tuner_v2_t ncclTunerPlugin_v2 = {"fixture-v2", initV2, getCollInfoV2,
                                                                               finalizeCtx};

#else
#error "FIXTURE_VERSION must be 6, 5 or 2"
#endif
