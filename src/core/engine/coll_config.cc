// ncclCollConfig_t -> CollCallConfig: size-aware copy, field validation, algorithm selection
// (semantics in coll_config.h).
#include "core/engine/coll_config.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {
namespace {

// Where each field of ncclCollConfig_t ends, in order: a caller's struct of `size` bytes holds
// the fields that end within it. Appending a field to the header means appending its end here.
constexpr size_t kFieldEnds[] = {
    offsetof(ncclCollConfig_t, ext) + sizeof(ncclConfigExt_t*),
    offsetof(ncclCollConfig_t, minCTAs) + sizeof(int),
    offsetof(ncclCollConfig_t, maxCTAs) + sizeof(int),
    offsetof(ncclCollConfig_t, nvlsCTAs) + sizeof(int),
    offsetof(ncclCollConfig_t, cgaClusterSize) + sizeof(int),
    offsetof(ncclCollConfig_t, algSelection) + sizeof(const char*),
    offsetof(ncclCollConfig_t, forceAlgSelection) + sizeof(int),
    offsetof(ncclCollConfig_t, CTAPolicy) + sizeof(int),
    offsetof(ncclCollConfig_t, userProfilerTag) + sizeof(uint64_t),
    offsetof(ncclCollConfig_t, launchCompletionEvent) + sizeof(cudaEvent_t),
};
static_assert(kFieldEnds[sizeof(kFieldEnds) / sizeof(kFieldEnds[0]) - 1] <= sizeof(ncclCollConfig_t));

// The caller's struct with every field it lacks at the initializer's value.
ncclResult_t readUserStruct(const char* call, const ncclCollConfig_t* user, ncclCollConfig_t* c) {
  if (user->magic != NCCL_API_MAGIC)
    return fail(ncclInvalidArgument,
                "%s: config->magic = 0x%x is not 0x%x: the ncclCollConfig_t was not initialized with "
                "NCCL_COLLCONFIG_INITIALIZER",
                call, user->magic, static_cast<unsigned>(NCCL_API_MAGIC));
  if (user->size < kFieldEnds[0])
    return fail(ncclInvalidArgument, "%s: config->size = %zu is too small for a ncclCollConfig_t (at least %zu bytes)",
                call, user->size, kFieldEnds[0]);
  size_t copy = 0;
  for (size_t end : kFieldEnds)
    if (end <= user->size) copy = end;
  *c = NCCL_COLLCONFIG_INITIALIZER;
  std::memcpy(static_cast<void*>(c), user, copy);
  return ncclSuccess;
}

// Walks the vendor options: bounded, cycle-proof (a cycle never ends, so it exceeds the bound);
// accl defines no options, so every entry is ignored.
ncclResult_t checkExtList(const char* call, const ncclConfigExt_t* ext) {
  int n = 0;
  for (const ncclConfigExt_t* e = ext; e != nullptr; e = e->next) {
    if (++n > kMaxCollConfigExt)
      return fail(ncclInvalidArgument,
                  "%s: config->ext has more than %d entries (or its next pointers form a cycle)", call,
                  kMaxCollConfigExt);
  }
  if (n > 0) ACCL_INFO(ACCL_LOG_COLL, "%s: ignoring %d vendor option(s) in config->ext", call, n);
  return ncclSuccess;
}

bool isSet(int v) { return v != NCCL_CONFIG_UNDEF_INT; }

ncclResult_t checkOptionalRange(const char* call, const char* field, int v, int lo, int hi) {
  if (isSet(v) && (v < lo || v > hi))
    return fail(ncclInvalidArgument, "%s: config->%s = %d is invalid (must be in [%d, %d] or NCCL_CONFIG_UNDEF_INT)",
                call, field, v, lo, hi);
  return ncclSuccess;
}

ncclResult_t checkChannelBounds(const char* call, const ncclCollConfig_t& c, const ncclComm* comm,
                                CollCallConfig* out) {
  const int commMax = comm->config.base.maxCTAs;
  ACCL_CHECK(checkOptionalRange(call, "minCTAs", c.minCTAs, 1, commMax));
  ACCL_CHECK(checkOptionalRange(call, "maxCTAs", c.maxCTAs, 1, commMax));
  if (isSet(c.minCTAs) && isSet(c.maxCTAs) && c.minCTAs > c.maxCTAs)
    return fail(ncclInvalidArgument, "%s: config->minCTAs = %d is larger than config->maxCTAs = %d", call, c.minCTAs,
                c.maxCTAs);
  out->minChannels = isSet(c.minCTAs) ? c.minCTAs : 0;
  out->maxChannels = isSet(c.maxCTAs) ? c.maxCTAs : 0;
  return ncclSuccess;
}

// The fields with no meaning on accl's backends: checked, then accepted.
ncclResult_t checkAcceptedFields(const char* call, const ncclCollConfig_t& c, const ncclComm* comm) {
  ACCL_CHECK(checkOptionalRange(call, "nvlsCTAs", c.nvlsCTAs, 1, 64));
  ACCL_CHECK(checkOptionalRange(call, "cgaClusterSize", c.cgaClusterSize, 0, 8));
  const int policyBits = NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO;
  if (isSet(c.CTAPolicy) && (c.CTAPolicy & ~policyBits) != 0)
    return fail(ncclInvalidArgument,
                "%s: config->CTAPolicy = 0x%x has unknown bits (NCCL_CTA_POLICY_* flags are 0x%x or "
                "NCCL_CONFIG_UNDEF_INT)",
                call, static_cast<unsigned>(c.CTAPolicy), static_cast<unsigned>(policyBits));
  if (c.forceAlgSelection != 0 && c.forceAlgSelection != 1)
    return fail(ncclInvalidArgument, "%s: config->forceAlgSelection = %d is invalid (must be 0 or 1)", call,
                c.forceAlgSelection);
  if (c.launchCompletionEvent != nullptr) {
    if (comm->backend == Backend::Host)
      return fail(ncclInvalidUsage,
                  "%s: config->launchCompletionEvent is set, but the host backend has no CUDA stream to record an "
                  "event on (it runs collectives on host threads); pass NULL",
                  call);
    return fail(ncclInvalidUsage,
                "%s: config->launchCompletionEvent is not supported yet: accl's CUDA backend launches no collective "
                "kernel whose completion could be recorded; pass NULL",
                call);
  }
  return ncclSuccess;
}

// Parses algSelection for `func` into out->algoMask / restrictsAlgo. A string that does not parse
// fails the call when forced, else leaves the call automatic.
ncclResult_t parseSelection(const char* call, FuncId func, const ncclCollConfig_t& c, CollCallConfig* out) {
  if (c.algSelection == nullptr || c.algSelection[0] == '\0') return ncclSuccess;
  const std::string varName = std::string(call) + ": config->algSelection";
  AlgoProtoFilter filter = defaultAlgoProtoFilter();
  std::string why;
  ncclResult_t res = applyAlgoList(varName.c_str(), c.algSelection, &filter, c.forceAlgSelection ? nullptr : &why);
  if (res != ncclSuccess) {
    if (c.forceAlgSelection) return res;  // the parser's message names the call and the string
    ACCL_INFO(ACCL_LOG_TUNING, "%s; forceAlgSelection = 0: automatic selection instead", why.c_str());
    return ncclSuccess;
  }
  if (func == kFuncSendRecv) {
    ACCL_INFO(ACCL_LOG_TUNING,
              "%s: config->algSelection \"%s\" has nothing to select: the call runs as point-to-point transfers",
              call, c.algSelection);
    return ncclSuccess;
  }
  out->algoMask = filter.algos[func];
  out->restrictsAlgo = out->algoMask != kAllAlgosMask;
  return ncclSuccess;
}

// Picks the algorithm of a restricted call now (so an unsatisfiable selection queues nothing).
ncclResult_t chooseWithinSelection(const char* call, FuncId func, size_t bytes, const ncclCollConfig_t& c,
                                   const ncclComm* comm, CollCallConfig* out) {
  if (comm->engine->tuner->chooseWithin(func, bytes, out->algoMask, &out->choice)) return ncclSuccess;
  const char* backend = comm->backend == Backend::Host ? "host" : "CUDA";
  if (c.forceAlgSelection)
    return fail(ncclInvalidUsage,
                "%s: config->algSelection \"%s\" cannot be honoured: no algorithm it allows for %s is available "
                "(the %s backend, NCCL_ALGO / NCCL_PROTO, %zu bytes on %d ranks); set forceAlgSelection = 0 to fall "
                "back to automatic selection",
                call, c.algSelection, funcName(func), backend, bytes, comm->nranks);
  ACCL_INFO(ACCL_LOG_TUNING,
            "%s: config->algSelection \"%s\" leaves no available algorithm for %s on the %s backend; "
            "forceAlgSelection = 0: automatic selection instead",
            call, c.algSelection, funcName(func), backend);
  out->restrictsAlgo = false;
  out->algoMask = kAllAlgosMask;
  return ncclSuccess;
}

}  // namespace

ncclResult_t resolveCollConfig(const char* call, FuncId func, size_t bytes, const ncclCollConfig_t* user,
                               const ncclComm* comm, CollCallConfig* out) {
  *out = CollCallConfig{};
  ncclCollConfig_t c;
  ACCL_CHECK(readUserStruct(call, user, &c));
  ACCL_CHECK(checkExtList(call, c.ext));
  ACCL_CHECK(checkChannelBounds(call, c, comm, out));
  ACCL_CHECK(checkAcceptedFields(call, c, comm));
  ACCL_CHECK(parseSelection(call, func, c, out));
  if (out->restrictsAlgo) ACCL_CHECK(chooseWithinSelection(call, func, bytes, c, comm, out));
  out->profilerTag = c.userProfilerTag;
  out->given = true;
  return ncclSuccess;
}

int boundChannels(int tunerChannels, const CollCallConfig& cfg, int available) {
  int n = tunerChannels;
  if (cfg.minChannels > 0) n = std::max(n, cfg.minChannels);
  if (cfg.maxChannels > 0) n = std::min(n, cfg.maxChannels);
  return std::clamp(n, 1, std::max(1, available));
}

}  // namespace accl
