/*
 * nccl.h — accl's public C interface.
 *
 * accl is a drop-in replacement for NCCL 2.32.3. This header is written from scratch but is
 * binary compatible with NVIDIA's nccl.h of that release: same macro values, same enum values,
 * same struct layouts, same function names and signatures. Programs compiled against either
 * header run against either library (tests/abi checks this entry by entry). Structs that grew
 * over the releases (ncclConfig_t, ncclCollConfig_t) carry their size and version, so programs
 * compiled against an older header (2.28 and before) keep working too.
 *
 * It compiles as C (C99 and later) and as C++. When the CUDA runtime headers are reachable they
 * are included, as NVIDIA's header does; define ACCL_NO_CUDA_HEADERS to skip them, in which case
 * cudaStream_t is declared here with the identical type.
 *
 * Every function `ncclX` has a twin `pncclX` with the same signature. The library defines
 * `pncclX` and makes `ncclX` a weak alias of it, so a profiling layer can interpose `ncclX` and
 * forward to `pncclX`.
 */
#ifndef NCCL_H_
#define NCCL_H_

/* ---- CUDA types -------------------------------------------------------------------------------- */

#if !defined(ACCL_NO_CUDA_HEADERS) && defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#define ACCL_HAVE_CUDA_HEADERS 1
#endif
#endif

#if defined(ACCL_HAVE_CUDA_HEADERS)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif
#else
/* Same types the CUDA runtime uses: pointers to incomplete structs. */
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#endif

#include <limits.h> /* INT_MIN */
#include <stddef.h> /* size_t, NULL */
#include <stdint.h> /* int8_t ... uint64_t */

/* ---- Version ----------------------------------------------------------------------------------- */

#define NCCL_MAJOR 2
#define NCCL_MINOR 32
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 23203
/* Releases up to 2.8 packed the version as X*1000+Y*100+Z; from 2.9 on it is X*10000+Y*100+Z. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles and identifiers ------------------------------------------------------------------- */

typedef struct ncclComm* ncclComm_t;            /* a communicator; contents are private */
typedef struct ncclWindow_vidmem* ncclWindow_t; /* a registered memory window */
#define NCCL_COMM_NULL NULL

/* Opaque blob made by ncclGetUniqueId on one rank and handed to all others out of band. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---- Result codes ------------------------------------------------------------------------------ */

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1, /* a CUDA call failed */
  ncclSystemError = 2,        /* a system call or resource failed */
  ncclInternalError = 3,      /* a bug inside the library */
  ncclInvalidArgument = 4,    /* a bad value was passed */
  ncclInvalidUsage = 5,       /* the API was used the wrong way */
  ncclRemoteError = 6,        /* a peer died or the network failed */
  ncclInProgress = 7,         /* nonblocking operation not finished yet */
  ncclTimeout = 8,            /* an operation did not finish within its time limit */
  ncclNumResults = 9
} ncclResult_t;

/* ---- Constants --------------------------------------------------------------------------------- */

#define NCCL_CONFIG_UNDEF_INT INT_MIN /* config field left at "library decides" */
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1 /* ncclCommSplit color: this rank joins no new communicator */
#define NCCL_UNDEF_FLOAT -1.0f

/* The magic word of every versioned struct (ncclConfig_t, ncclCollConfig_t, ...): a struct whose
 * magic differs was not made from its initializer. */
#define NCCL_API_MAGIC 0xcafebeef

/* winFlags for ncclCommWindowRegister */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_GIN_ONLY 0x04     /* register for GPU-initiated networking only */
#define NCCL_WIN_CFT_COUNTED 0x08  /* register for counted CFT only */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* shrinkFlags for ncclCommShrink */
#define NCCL_SHRINK_DEFAULT 0x00 /* the parent is healthy: shrink it as is */
#define NCCL_SHRINK_ABORT 0x01   /* abort the parent's pending work before shrinking */

/* revokeFlags for ncclCommRevoke (only 0 is accepted) */
#define NCCL_REVOKE_DEFAULT 0x00

/* ncclConfig_t.hostCftMode */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* ncclConfig_t.nvlsHostMode: which host-side NVLS parts to turn off (flags may be or-ed). */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX /* every NVLS part, present and future */
} ncclNvlsHostMode_t;

/* ---- Communicator configuration ---------------------------------------------------------------- */

/* Always start from NCCL_CONFIG_INITIALIZER, then set the fields you care about. size, magic and
 * version let the library tell which fields a caller's (possibly older) struct contains. */
typedef struct ncclConfig_v23100 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;          /* 0: init/finalize/collectives may return ncclInProgress */
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;   /* network plugin/transport to use, by name */
  int splitShare;        /* ncclCommSplit children share the parent's resources */
  int trafficClass;
  const char* commName;  /* label shown in logs */
  int collnetEnable;
  int CTAPolicy;         /* NCCL_CTA_POLICY_* */
  int shrinkShare;       /* ncclCommShrink children share the parent's resources */
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  /* 2.31 and later */
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
  int launchOrderImplicit;
  int numRmaSig;
  int rmaEagerInit;
  int hostCftMode;       /* ncclHostCftMode_t */
  int nvlsHostMode;      /* ncclNvlsHostMode_t flags */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                       \
  {                                                                                   \
    sizeof(ncclConfig_t),                             /* size */                      \
    NCCL_API_MAGIC,                                   /* magic */                     \
    NCCL_VERSION_CODE,                                /* version */                   \
    NCCL_CONFIG_UNDEF_INT,                            /* blocking */                  \
    NCCL_CONFIG_UNDEF_INT,                            /* cgaClusterSize */            \
    NCCL_CONFIG_UNDEF_INT,                            /* minCTAs */                   \
    NCCL_CONFIG_UNDEF_INT,                            /* maxCTAs */                   \
    NCCL_CONFIG_UNDEF_PTR,                            /* netName */                   \
    NCCL_CONFIG_UNDEF_INT,                            /* splitShare */                \
    NCCL_CONFIG_UNDEF_INT,                            /* trafficClass */              \
    NCCL_CONFIG_UNDEF_PTR,                            /* commName */                  \
    NCCL_CONFIG_UNDEF_INT,                            /* collnetEnable */             \
    NCCL_CONFIG_UNDEF_INT,                            /* CTAPolicy */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* shrinkShare */               \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlsCTAs */                  \
    NCCL_CONFIG_UNDEF_INT,                            /* nChannelsPerNetPeer */       \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlinkCentricSched */        \
    NCCL_CONFIG_UNDEF_INT,                            /* graphUsageMode */            \
    NCCL_CONFIG_UNDEF_INT,                            /* numRmaCtx */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* maxP2pPeers */               \
    NCCL_CONFIG_UNDEF_INT,                            /* graphStreamOrdering */       \
    NCCL_CONFIG_UNDEF_INT,                            /* launchOrderImplicit */       \
    NCCL_CONFIG_UNDEF_INT,                            /* numRmaSig */                 \
    NCCL_CONFIG_UNDEF_INT,                            /* rmaEagerInit */              \
    NCCL_CONFIG_UNDEF_INT,                            /* hostCftMode */               \
    NCCL_CONFIG_UNDEF_INT,                            /* nvlsHostMode */              \
  }

/* One vendor option for a ncclCollConfig_t: a (vendorId, optionId) key and a value, chained
 * through next (NULL ends the list). A library ignores the keys of other vendors. */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next;
  struct {
    int vendorId; /* non-zero, below 2^24, picked by the vendor */
    int optionId;
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val;
} ncclConfigExt_t;

/* Per-call settings for the nccl*Config collectives. Start from NCCL_COLLCONFIG_INITIALIZER and
 * set the same values on every rank. Fields are only ever appended; size and version say which
 * fields a caller's struct has. */
typedef struct ncclCollConfig_v23200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclConfigExt_t* ext;     /* vendor options, or NULL */
  int minCTAs;              /* channel bounds for this call; UNDEF: the communicator's */
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  const char* algSelection; /* NCCL_ALGO syntax, e.g. "ring" or "^tree"; NULL or "": automatic */
  int forceAlgSelection;    /* 1 (default): a selection that cannot be met is an error */
  int CTAPolicy;            /* NCCL_CTA_POLICY_* flags; UNDEF: the communicator's */
  uint64_t userProfilerTag; /* handed unchanged to profiler plugins; values with the top bit set are reserved */
  cudaEvent_t launchCompletionEvent; /* recorded once the call's kernel is launched; NULL: none */
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                                      \
  {                                                                      \
    sizeof(ncclCollConfig_t),                 /* size */                 \
    NCCL_API_MAGIC,                           /* magic */                \
    NCCL_VERSION_CODE,                        /* version */              \
    NCCL_CONFIG_UNDEF_PTR,                    /* ext */                  \
    NCCL_CONFIG_UNDEF_INT,                    /* minCTAs */              \
    NCCL_CONFIG_UNDEF_INT,                    /* maxCTAs */              \
    NCCL_CONFIG_UNDEF_INT,                    /* nvlsCTAs */             \
    NCCL_CONFIG_UNDEF_INT,                    /* cgaClusterSize */       \
    NCCL_CONFIG_UNDEF_PTR,                    /* algSelection */         \
    1,                                        /* forceAlgSelection */    \
    NCCL_CONFIG_UNDEF_INT,                    /* CTAPolicy */            \
    0,                                        /* userProfilerTag */      \
    NCCL_CONFIG_UNDEF_PTR,                    /* launchCompletionEvent */ \
  }

/* Filled in by ncclGroupSimulateEnd. Start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; /* predicted run time of the group, in microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER                                          \
  {                                                                        \
    sizeof(ncclSimInfo_t),                            /* size */           \
    0x74685283,                                       /* magic */          \
    NCCL_VERSION_CODE,                                /* version */        \
    NCCL_UNDEF_FLOAT                                  /* estimatedTime */  \
  }

/* ---- Reduction operators and data types -------------------------------------------------------- */

/* Only used to size ncclMaxRedOp below so that ncclRedOp_t keeps the width of a plain enum. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5, /* count of built-in ops; user-created ops (ncclRedOpCreatePreMulSum) are >= this */
  /* Largest value an operator handle may take: the biggest positive value of an enum-sized int. */
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives, and when it is read. */
typedef enum {
  ncclScalarDevice = 0,       /* device memory, read by the kernel each time the op runs */
  ncclScalarHostImmediate = 1 /* host memory, copied before ncclRedOpCreatePreMulSum returns */
} ncclScalarResidence_t;

/* ---- Functions --------------------------------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
#define ACCL_DEPRECATED_(msg) __attribute__((deprecated(msg)))
#else
#define ACCL_DEPRECATED_(msg)
#endif

/* Memory suited to every optimisation (registration, windows); free with ncclMemFree. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* Library version as NCCL_VERSION_CODE. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* Makes the rendezvous id; call once, then share it with every rank. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* Communicator creation. Each rank calls one of these (in its own thread or process, or inside a
 * group) with the same id and nranks and its own rank in [0, nranks). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/* One process, ndev communicators at once; devlist NULL means devices 0..ndev-1. */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
/* Like ncclCommInitRankConfig, but with nId ids (the same list on every rank) to spread the
 * rendezvous load. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);

/* Teardown: Finalize completes outstanding work (may return ncclInProgress when nonblocking),
 * Destroy frees local state, Abort stops everything without waiting. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);
/* Stops in-flight work so that destroy/split/shrink can proceed; revokeFlags must be 0. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* New communicators from an existing one: by color/key (NCCL_SPLIT_NOCOLOR gives NULL), or by
 * dropping a list of ranks. A NULL config inherits the parent's. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags);

/* Growing a communicator. The existing root rank makes an id for the grow with
 * ncclCommGetUniqueId (one id outstanding at a time, each used once) and hands it to the joining
 * ranks. Then every rank calls ncclCommGrow with the new size nRanks: existing ranks pass their
 * comm, rank -1 and (root only) the id; joining ranks pass comm NULL, the id and their new rank. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config);

/* Errors: a fixed text per code, and the text of the most recent failure (comm is ignored). */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Re-reads the logging environment variables. Kept for old clients only. */
ACCL_DEPRECATED_("ncclResetDebugInit is deprecated and will be removed")
void ncclResetDebugInit(void);
ACCL_DEPRECATED_("pncclResetDebugInit is deprecated and will be removed")
void pncclResetDebugInit(void);

/* Communicator queries. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* Suspend releases the memory a communicator can rebuild (flags: NCCL_SUSPEND_MEM); the
 * communicator is unusable until Resume restores it. */
#define NCCL_SUSPEND_MEM 0x01
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);

/* What ncclCommMemStats reports, in bytes except where noted. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* memory that Suspend can release */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* memory held for the communicator's whole life */
  ncclStatGpuMemTotal = 3      /* all memory the communicator holds */
} ncclCommMemStat_t;
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

/* Buffer registration (zero-copy) and symmetric memory windows. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
/* The buffer a window was registered with. */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

/* A per-communicator, per-datatype operator: each input is multiplied by *scalar, then summed. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* Collectives. Every rank of the communicator makes the matching call; the call returns once
 * the work is queued on `stream`. sendbuff == recvbuff (or the rank's slice of it, for the
 * gather/scatter shapes) means in place. */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
/* Older in-place-only broadcast. */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/* recvcount elements per rank; sendbuff holds nranks*recvcount. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/* sendcount elements per rank; recvbuff holds nranks*sendcount. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);
/* count elements to and from every rank; block j of sendbuff goes to rank j. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
/* count elements from every rank into block i of root's recvbuff. */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
/* Block i of root's sendbuff (count elements) goes to rank i. */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream);

/* Point to point; the peer posts the matching call with the same count and type. Put several in
 * one group when they must progress together. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);

/* Every collective again with a trailing per-call config (ncclCollConfig_t); config NULL is the
 * plain call. */
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                              const ncclCollConfig_t* config);
ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                               const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                     const ncclCollConfig_t* config);
ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                      const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);

/* One-sided operations on registered windows (GPU only; the host backend refuses them).
 * PutSignal writes count elements of localbuff into peer's window at peerWinOffset bytes, then
 * raises signal sigIdx of context ctx on peer; Signal raises it without data; WaitSignal waits
 * until each descriptor's peer has raised its signal opCnt times. flags must be 0. */
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                            ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
typedef struct {
  int opCnt;  /* how many signals to wait for */
  int peer;   /* from which rank */
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);

/* Groups: calls between Start and End are collected and launched together at End (which may
 * nest). SimulateEnd ends the group without running it and reports the predicted time. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* Encryption of the library's TCP connections between processes (bootstrap, socket network):
 * TLS 1.3 with a pre-shared key of at least 32 bytes (psk, a C string, copied), applied to
 * connections opened after the call. Needs OpenSSL 3 (libssl.so.3) at run time. */
typedef enum {
  NCCL_ENCRYPTION_MODE_NONE = 0,
  NCCL_ENCRYPTION_MODE_PSK = 1
} ncclEncryptionMode_t;

typedef struct ncclEncryptionConfig_v23200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int mode;        /* ncclEncryptionMode_t */
  const char* psk; /* the key, for NCCL_ENCRYPTION_MODE_PSK */
} ncclEncryptionConfig_t;

#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                 \
  {                                                                        \
    sizeof(ncclEncryptionConfig_t),           /* size */                   \
    NCCL_API_MAGIC,                           /* magic */                  \
    NCCL_VERSION_CODE,                        /* version */                \
    NCCL_ENCRYPTION_MODE_NONE,                /* mode */                   \
    NCCL_CONFIG_UNDEF_PTR,                    /* psk */                    \
  }

ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config);
ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config);

/* Settings (NCCL_* and ACCL_* variables) read by key. A handle from ncclParamBind stays valid
 * for the life of the process; the typed getters convert the setting's value and fail when it
 * does not fit the type. Strings returned by GetStr / GetParameter / GetAllParameterKeys belong
 * to the library and stay valid until the same call is made again on the same thread. */
typedef struct ncclParamHandle* ncclParamHandle_t;
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out);
/* The value's bytes copied into out (at most maxLen); *len gets the full length. */
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
/* Without a handle: the value as text, and the list of every key. */
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);
/* Every setting, its value and where it came from, to the log (INFO). */
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

#undef ACCL_DEPRECATED_

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
