/*
 * nccl.h — accl's public C interface.
 *
 * accl is a drop-in replacement for NCCL 2.28.9. This header is written from scratch but is
 * binary compatible with NVIDIA's nccl.h of that release: same macro values, same enum values,
 * same struct layouts, same function names and signatures. Programs compiled against either
 * header run against either library (tests/abi checks this entry by entry).
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
/* Same type the CUDA runtime uses: a pointer to an incomplete struct CUstream_st. */
typedef struct CUstream_st* cudaStream_t;
#endif

#include <limits.h> /* INT_MIN */
#include <stddef.h> /* size_t, NULL */

/* ---- Version ----------------------------------------------------------------------------------- */

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22809
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
  ncclNumResults = 8
} ncclResult_t;

/* ---- Constants --------------------------------------------------------------------------------- */

#define NCCL_CONFIG_UNDEF_INT INT_MIN /* config field left at "library decides" */
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1 /* ncclCommSplit color: this rank joins no new communicator */
#define NCCL_UNDEF_FLOAT -1.0f

/* winFlags for ncclCommWindowRegister */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
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

/* ---- Communicator configuration ---------------------------------------------------------------- */

/* Always start from NCCL_CONFIG_INITIALIZER, then set the fields you care about. size, magic and
 * version let the library tell which fields a caller's (possibly older) struct contains. */
typedef struct ncclConfig_v22800 {
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
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                       \
  {                                                                                   \
    sizeof(ncclConfig_t),                             /* size */                      \
    0xcafebeef,                                       /* magic */                     \
    NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */                   \
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
    NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */        \
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

/* Buffer registration (zero-copy) and symmetric memory windows. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

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

/* Groups: calls between Start and End are collected and launched together at End (which may
 * nest). SimulateEnd ends the group without running it and reports the predicted time. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#undef ACCL_DEPRECATED_

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
