// The binary interface of NCCL tuner plugins (the structs a libnccl-tuner-*.so exports as
// ncclTunerPlugin_v2 ... ncclTunerPlugin_v6), declared here in accl's own names. Only the layout
// has to match NCCL 2.32: field order, types and sizes; the names are ours. A plugin built
// against NCCL's headers is loaded unchanged (tuner/tuner_plugin.cc).
//
// Versions (the first NCCL release that looks for the symbol in brackets):
//   v2 [2.21]  init(nRanks, nNodes, logger, &ctx); getCollInfo returns an algorithm and protocol.
//   v3 [2.22]  getCollInfo edits a cost table float[7][3] (µs; -1 = leave alone) instead.
//   v4 [2.24]  v3 plus a `regBuff` argument (the user buffers are registered).
//   v5 [2.28]  init also gets the communicator id, NVLink-domain info and the tuning constants
//              (in/out: the plugin may edit them before the model uses them); destroy is
//              renamed finalize.
//   v6 [2.30]  v5 plus a fifth member, getChunkSize (may be NULL): the plugin sees the chunk size
//              the library computed for the chosen algorithm / protocol / channels and may
//              change it (the library still clamps it to what its buffers allow). Constants and
//              NVLink-domain info are v5's. NCCL 2.32's example tuner exports v6 and v5.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl {

// Sizes of the tables as NCCL 2.28 lays them out.
inline constexpr int kPluginAlgos = 7;      // Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT
inline constexpr int kPluginProtos = 3;     // LL LL128 Simple
inline constexpr int kPluginHwLinks = 3;    // NVLink, PCI, network
inline constexpr int kPluginCompCaps = 4;   // Volta, Ampere, Hopper, Blackwell
inline constexpr int kPluginScales = 3;     // 1 node, 2 nodes, 4+ nodes

// Index names for the constants' rows.
enum PluginHwLink : int { kHwNvlink = 0, kHwPci = 1, kHwNet = 2 };
enum PluginCompCap : int { kCcVolta = 0, kCcAmpere = 1, kCcHopper = 2, kCcBlackwell = 3 };

// The plugin logger: NCCL passes its own logging function; level follows ncclDebugLogLevel
// (0 none, 1 version, 2 warn, 3 info, 4 abort, 5 trace), flags are subsystem bits.
using PluginLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// ncclFunc_t as plugins see it (AllReduce = 4 ...); passed by value as an int-sized enum.
using PluginFunc = int;

// NCCL's cost model constants (v5 init, in/out). 144 doubles = 1152 bytes.
struct TunerConstantsV5 {
  double baseLatencies[kPluginAlgos][kPluginProtos];               // µs
  double hwLatencies[kPluginHwLinks][kPluginAlgos][kPluginProtos];  // µs per hop
  double llMaxBws[kPluginCompCaps][kPluginScales];                  // GB/s (rows: see gpu_model.cc)
  double perChMaxRingLL128Bws[kPluginCompCaps][kPluginScales];
  double perChMaxTreeLL128Bws[kPluginCompCaps][kPluginScales];
  double perChMaxTreeBws[kPluginCompCaps][kPluginScales];
  double perChMaxNVLSTreeBws[kPluginCompCaps][kPluginScales];
};
static_assert(sizeof(TunerConstantsV5) == 1152, "v5 tuner constants must be 144 doubles");

// NVLink domains of the communicator (v5 init).
struct NvlDomainInfoV5 {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};

struct TunerPluginV5 {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, PluginLogger logger,
                       NvlDomainInfoV5* nvlDomainInfo, TunerConstantsV5* constants);
  // costTable is really float[numAlgo][numProto], passed as float**.
  ncclResult_t (*getCollInfo)(void* ctx, PluginFunc func, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
};

struct TunerPluginV6 {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, PluginLogger logger,
                       NvlDomainInfoV5* nvlDomainInfo, TunerConstantsV5* constants);
  ncclResult_t (*getCollInfo)(void* ctx, PluginFunc func, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
  // In/out *chunkSize in bytes, for one collective with the algorithm, protocol (NCCL indices)
  // and channel count already chosen. Optional.
  ncclResult_t (*getChunkSize)(void* ctx, PluginFunc func, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
};
// v6 starts with v5's four members, in the same places.
static_assert(offsetof(TunerPluginV6, finalize) == 3 * sizeof(void*) &&
                  offsetof(TunerPluginV6, getChunkSize) == 4 * sizeof(void*),
              "v6 tuner layout: name, init, getCollInfo, finalize, getChunkSize");

struct TunerPluginV4 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, PluginLogger logger, void** ctx);
  ncclResult_t (*getCollInfo)(void* ctx, PluginFunc func, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* ctx);
};

struct TunerPluginV3 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, PluginLogger logger, void** ctx);
  ncclResult_t (*getCollInfo)(void* ctx, PluginFunc func, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* ctx);
};

struct TunerPluginV2 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, PluginLogger logger, void** ctx);
  // Writes the chosen algorithm and protocol (NCCL indices) and optionally a channel count.
  ncclResult_t (*getCollInfo)(void* ctx, PluginFunc func, size_t nBytes, int collNetSupport, int nvlsSupport,
                              int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* ctx);
};

// The exported symbol names, newest first (the order they are tried in).
inline constexpr const char* kTunerSymbolV6 = "ncclTunerPlugin_v6";
inline constexpr const char* kTunerSymbolV5 = "ncclTunerPlugin_v5";
inline constexpr const char* kTunerSymbolV4 = "ncclTunerPlugin_v4";
inline constexpr const char* kTunerSymbolV3 = "ncclTunerPlugin_v3";
inline constexpr const char* kTunerSymbolV2 = "ncclTunerPlugin_v2";

}  // namespace accl
