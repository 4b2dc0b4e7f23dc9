// The binary interface of NCCL profiler plugins (the structs a libnccl-profiler*.so exports as
// ncclProfiler_v1 ... ncclProfiler_v7), declared in accl's own names. Only the layout has to
// match NCCL's: field order, types and sizes (checked below for LP64 and in
// tests/unit/profiler_abi_test.cc); a plugin built against NCCL's headers loads unchanged.
//
// Every version has five members: name, init, startEvent, stopEvent, recordEventState,
// finalize. What changed (first NCCL release that looks for the symbol in brackets):
//   v1 [2.23]  descriptor type is a uint8_t; coll/p2p name func, datatype, algo, proto by index
//              and carry the communicator's name and hash; init(&ctx, &mask).
//   v2 [2.23]  func / datatype / algo / proto become strings; the op and CollNet/NVLS flags go.
//   v3 [2.24]  trafficBytes goes; kernelCh (a channel id) and netPlugin events appear.
//   v4 [2.25]  the comm name and hash move from coll/p2p to init (with nNodes, nranks, rank
//              and a logger); coll/p2p report nChannels; kernelCh carries a GPU timestamp;
//              ProxyOp states give way to ProxyStep states (state args: proxyStep.transSize).
//   v5 [2.26]  the type widens to uint64_t; GroupApi / CollApi / P2pApi / KernelLaunch events
//              appear and parent Coll / P2p (which keep the v4 Group as parentGroup); init
//              takes the communicator id before the mask.
//   v6 [2.29]  v5 plus the descriptors of copy-engine collectives (ceColl, ceCollSync,
//              ceCollBatch), which accl never emits; same state args and init.
//   v7 [2.31]  every API and task event (collApi, p2pApi, coll, p2p, ceColl) ends with the
//              caller's userTag (ncclCollConfig_t.userProfilerTag, 0 = untagged); coll also
//              names the kernel variant and says whether it was a symmetric kernel; a new
//              KernelPhase event (a phase of a symmetric kernel on one channel, stopped with
//              the KernelPhaseStop state and kernelCh.pTimer in the state args). Same init.
// accl's own event source speaks v7 (ProfDescrV7); profiler_adapters.cc turns that into the
// older descriptors. Each v7 member starts with its v6 layout: new fields only come after.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl::prof {

// Event types (the descriptor's `type` and the activation mask's bits), as NCCL numbers them.
enum EventType : uint64_t {
  kGroup = 1u << 0,         // one launch (a group's work on one communicator)
  kColl = 1u << 1,          // one collective of the launch
  kP2p = 1u << 2,           // one send or receive of the launch
  kProxyOp = 1u << 3,       // the network proxy's work for one connection and operation
  kProxyStep = 1u << 4,     // one network transfer of a ProxyOp
  kProxyCtrl = 1u << 5,     // the proxy thread between operations
  kKernelCh = 1u << 6,      // one channel running one operation
  kNetPlugin = 1u << 7,     // an event a net plugin defines
  kGroupApi = 1u << 8,      // the API calls of one group, from the first call to ncclGroupEnd
  kCollApi = 1u << 9,       // one collective API call
  kP2pApi = 1u << 10,       // one ncclSend / ncclRecv call
  kKernelLaunch = 1u << 11, // the launch of one plan
  kCeColl = 1u << 12,       // v6 copy-engine events: declared, never emitted by accl
  kCeSync = 1u << 13,
  kCeBatch = 1u << 14,
  kKernelPhase = 1u << 15,  // v7: a phase of a symmetric kernel (NCCL's only); accl emits none
};
inline constexpr int kAllEventsV5 = (1 << 12) - 1;  // 4095: every event a v5 plugin can ask for

// Event states passed to recordEventState (ncclProfilerEventState_t's values).
enum EventState : int {
  kProxyOpSendPosted = 0,  // 0..7: ProxyOp states of v1-v3
  kProxyOpSendRemFifoWait = 1,
  kProxyOpSendTransmitted = 2,
  kProxyOpSendDone = 3,
  kProxyOpRecvPosted = 4,
  kProxyOpRecvReceived = 5,
  kProxyOpRecvTransmitted = 6,
  kProxyOpRecvDone = 7,
  kProxyStepSendGpuWait = 8,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGpuWait = 12,
  kProxyCtrlIdle = 13,
  kProxyCtrlActive = 14,
  kProxyCtrlSleep = 15,
  kProxyCtrlWakeup = 16,
  kProxyCtrlAppend = 17,
  kProxyCtrlAppendEnd = 18,
  kProxyOpInProgress = 19,
  kProxyStepSendPeerWait = 20,
  kNetPluginUpdate = 21,
  kKernelChStop = 22,
  kGroupStartApiStop = 23,  // ncclGroupStart's part of a GroupApi event is over
  kGroupEndApiStart = 24,   // ncclGroupEnd began
  kCeCollStart = 25,        // 25..30: v6 copy-engine states (accl emits no copy-engine events)
  kCeCollComplete = 26,
  kCeSyncStart = 27,
  kCeSyncComplete = 28,
  kCeBatchStart = 29,
  kCeBatchComplete = 30,
  kKernelPhaseStop = 31,    // v7: a KernelPhase ended (its time in kernelCh.pTimer)
};

// The logger handed to v4+ init: level as ncclDebugLogLevel, flags are subsystem bits.
using LogFn = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// --- descriptor members shared by several versions ---
struct ProxyOpDescr {
  pid_t pid;          // the process that made the operation
  uint8_t channelId;
  int peer;
  int nSteps;         // network transfers of the operation
  int chunkSize;      // bytes per transfer
  int isSend;
};
struct ProxyStepDescr {
  int step;
};
struct NetPluginDescr {
  int64_t id;  // plugin type (bits 16..31) and event version (bits 0..15)
  void* data;
};
struct KernelChDescr {
  uint8_t channelId;
  uint64_t pTimer;  // start time in the kernel's clock (accl: ns of CLOCK_MONOTONIC)
};

// --- v5 / v6 ---
struct ProfDescrV6 {
  uint64_t type;    // one EventType
  void* parentObj;  // the parent event's handle (null for roots)
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;  // 1: the implicit group of a single call; more: inside ncclGroupStart
    } groupApi;
    struct {
      const char* func;  // "AllReduce", ...
      size_t count;
      const char* datatype;  // "ncclFloat32", ...
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;  // "Send" / "Recv"
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;  // per function, counted by the communicator
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;  // the launch's Group event (what v4 and older see as the parent)
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
    struct {  // v6 only, never emitted by accl
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
};

// v4 - v6 state arguments.
union ProfStateArgsV5 {
  struct {
    size_t transSize;  // bytes moved by the step
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // stop time in the kernel's clock
  } kernelCh;
};

// --- v7: accl's own event source speaks v7 ---
// Unchanged members are v6's own types; the changed ones repeat v6's fields and append.
struct ProfDescrV7 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    decltype(ProfDescrV6::groupApi) groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;  // ncclCollConfig_t.userProfilerTag of the call; 0: untagged
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
    } p2pApi;
    decltype(ProfDescrV6::kernelLaunch) kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
      const char* kernelVariant;  // NCCL: the symmetric kernel's name, null otherwise
      bool isSymColl;             // ran as a symmetric kernel (never in accl)
      uint64_t userTag;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
      uint64_t userTag;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
    struct {  // never emitted by accl
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
      uint64_t userTag;
    } ceColl;
    decltype(ProfDescrV6::ceCollSync) ceCollSync;
    decltype(ProfDescrV6::ceCollBatch) ceCollBatch;
    struct {  // never emitted by accl (NCCL: symmetric kernels only)
      uint8_t channelId;
      uint8_t phaseId;        // 0 initial sync, 1 compute, 2 final sync
      const char* phaseName;  // "initial_sync", "compute", "final_sync"
      uint64_t pTimer;        // start, in the kernel's clock
    } kernelPhase;
  };
};
// v7's state arguments are v5's: a KernelPhase stop carries its time in kernelCh.pTimer.
using ProfStateArgsV7 = ProfStateArgsV5;

// v5 descriptor: v6 without the copy-engine members (same size: ceColl is no larger than coll).
struct ProfDescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    decltype(ProfDescrV6::groupApi) groupApi;
    decltype(ProfDescrV6::collApi) collApi;
    decltype(ProfDescrV6::p2pApi) p2pApi;
    decltype(ProfDescrV6::kernelLaunch) kernelLaunch;
    decltype(ProfDescrV6::coll) coll;
    decltype(ProfDescrV6::p2p) p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

struct ProfDescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

struct ProfDescrV3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;  // the communicator's name
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    NetPluginDescr netPlugin;
  };
};

struct ProfDescrV2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    decltype(ProfDescrV3::p2p) p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
  };
};

struct ProfDescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;  // ncclFunc_t index
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;  // ncclDataType_t
      uint32_t op;       // ncclRedOp_t
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;   // NCCL_ALGO_* index
      uint8_t proto;  // NCCL_PROTO_* index
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
  };
};

// v1 - v3 state arguments (ProxyOp states carried the bytes and steps so far).
union ProfStateArgsV1 {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};

// The exported tables. Versions 1-3 share one init; 4 adds the communicator's facts; 5 - 7
// put the communicator id before the mask.
template <class Descr, class StateArgs>
struct ProfilerTableOldInit {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};
using ProfilerV1 = ProfilerTableOldInit<ProfDescrV1, ProfStateArgsV1>;
using ProfilerV2 = ProfilerTableOldInit<ProfDescrV2, ProfStateArgsV1>;
using ProfilerV3 = ProfilerTableOldInit<ProfDescrV3, ProfStateArgsV1>;

struct ProfilerV4 {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, LogFn logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ProfDescrV4* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, ProfStateArgsV5* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

template <class Descr>
struct ProfilerTableIdInit {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, LogFn logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, ProfStateArgsV5* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};
using ProfilerV5 = ProfilerTableIdInit<ProfDescrV5>;
using ProfilerV6 = ProfilerTableIdInit<ProfDescrV6>;
using ProfilerV7 = ProfilerTableIdInit<ProfDescrV7>;

// Newest first: the loader takes the first one a library exports.
inline constexpr int kNewestProfilerVersion = 7;
inline constexpr const char* kProfilerSymbols[] = {"ncclProfiler_v7", "ncclProfiler_v6", "ncclProfiler_v5",
                                                   "ncclProfiler_v4", "ncclProfiler_v3", "ncclProfiler_v2",
                                                   "ncclProfiler_v1"};

// NCCL's layouts on LP64 (x86-64, aarch64): sizes and the offsets a wrong declaration would move.
#if defined(__LP64__)
// v7 (by hand from the C rules: the union at 24, 8-byte members on 8-byte boundaries; each
// member keeps v6's offsets, then its new fields).
static_assert(sizeof(ProfDescrV7) == 136 && offsetof(ProfDescrV7, groupApi) == 24, "v7 descriptor");
static_assert(offsetof(ProfDescrV7, collApi.graphCaptured) == 24 + 40 &&
                  offsetof(ProfDescrV7, collApi.userTag) == 24 + 48,
              "v7 collApi");
static_assert(offsetof(ProfDescrV7, p2pApi.graphCaptured) == 24 + 32 &&
                  offsetof(ProfDescrV7, p2pApi.userTag) == 24 + 40,
              "v7 p2pApi");
static_assert(offsetof(ProfDescrV7, coll.parentGroup) == 24 + 80 &&
                  offsetof(ProfDescrV7, coll.kernelVariant) == 24 + 88 &&
                  offsetof(ProfDescrV7, coll.isSymColl) == 24 + 96 && offsetof(ProfDescrV7, coll.userTag) == 24 + 104,
              "v7 coll");
static_assert(offsetof(ProfDescrV7, p2p.parentGroup) == 24 + 40 && offsetof(ProfDescrV7, p2p.userTag) == 24 + 48,
              "v7 p2p");
static_assert(offsetof(ProfDescrV7, ceColl.stream) == 24 + 80 && offsetof(ProfDescrV7, ceColl.userTag) == 24 + 88,
              "v7 ceColl");
static_assert(offsetof(ProfDescrV7, kernelPhase.phaseId) == 24 + 1 &&
                  offsetof(ProfDescrV7, kernelPhase.phaseName) == 24 + 8 &&
                  offsetof(ProfDescrV7, kernelPhase.pTimer) == 24 + 16,
              "v7 kernelPhase");
static_assert(sizeof(ProfDescrV6) == 112 && offsetof(ProfDescrV6, groupApi) == 24, "v6 descriptor");
static_assert(sizeof(ProfDescrV5) == 112, "v5 descriptor");
static_assert(offsetof(ProfDescrV6, coll.nChannels) == 24 + 56 && offsetof(ProfDescrV6, coll.parentGroup) == 24 + 80,
              "v5/v6 coll");
static_assert(offsetof(ProfDescrV6, p2p.nChannels) == 24 + 36 && offsetof(ProfDescrV6, p2p.parentGroup) == 24 + 40,
              "v5/v6 p2p");
static_assert(offsetof(ProfDescrV6, collApi.graphCaptured) == 24 + 40 && offsetof(ProfDescrV6, groupApi.groupDepth) == 28,
              "v5/v6 api events");
static_assert(offsetof(ProfDescrV6, ceColl.stream) == 24 + 80 && offsetof(ProfDescrV6, ceCollBatch.useIntraSync) == 24 + 16,
              "v6 copy-engine events");
static_assert(sizeof(ProfDescrV4) == 104 && offsetof(ProfDescrV4, coll.proto) == 24 + 72, "v4 descriptor");
static_assert(sizeof(ProfDescrV3) == 120 && offsetof(ProfDescrV3, coll.nMaxChannels) == 24 + 72, "v3 descriptor");
static_assert(sizeof(ProfDescrV2) == 128 && offsetof(ProfDescrV2, coll.trafficBytes) == 24 + 72, "v2 descriptor");
static_assert(sizeof(ProfDescrV1) == 120 && offsetof(ProfDescrV1, coll.op) == 24 + 64 &&
                  offsetof(ProfDescrV1, coll.isNvls) == 24 + 88,
              "v1 descriptor");
static_assert(offsetof(ProxyOpDescr, isSend) == 20 && sizeof(KernelChDescr) == 16, "proxy / kernel members");
static_assert(sizeof(ProfStateArgsV5) == 8 && sizeof(ProfStateArgsV1) == 16, "state args");
static_assert(sizeof(ProfilerV7) == 6 * sizeof(void*) && sizeof(ProfilerV6) == 6 * sizeof(void*) &&
                  sizeof(ProfilerV1) == 6 * sizeof(void*),
              "tables");
#endif

}  // namespace accl::prof
