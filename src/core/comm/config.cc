// Config parsing: a user struct from an older header is shorter and has an older version;
// fields that version did not have are treated as undefined. Undefined fields are then
// inherited (split/shrink), overridden from the environment, or defaulted.
#include "core/comm/config.h"

#include <climits>
#include <cstring>

#include "util/check.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

// Marks every field that a header of `version` did not know about as undefined.
void forgetNewerFields(ncclConfig_t* c, unsigned version) {
  if (version < NCCL_VERSION(2, 14, 0)) c->blocking = NCCL_CONFIG_UNDEF_INT;
  if (version < NCCL_VERSION(2, 17, 0)) {
    c->cgaClusterSize = c->minCTAs = c->maxCTAs = NCCL_CONFIG_UNDEF_INT;
    c->netName = NCCL_CONFIG_UNDEF_PTR;
    c->splitShare = NCCL_CONFIG_UNDEF_INT;
  }
  if (version < NCCL_VERSION(2, 25, 0)) c->trafficClass = NCCL_CONFIG_UNDEF_INT;
  if (version < NCCL_VERSION(2, 27, 0)) {
    c->commName = NCCL_CONFIG_UNDEF_PTR;
    c->collnetEnable = c->CTAPolicy = c->shrinkShare = c->nvlsCTAs = NCCL_CONFIG_UNDEF_INT;
  }
  if (version < NCCL_VERSION(2, 28, 0)) c->nChannelsPerNetPeer = c->nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
  if (version < NCCL_VERSION(2, 31, 0)) {
    c->graphUsageMode = c->numRmaCtx = c->maxP2pPeers = c->graphStreamOrdering = NCCL_CONFIG_UNDEF_INT;
    c->launchOrderImplicit = c->numRmaSig = c->rmaEagerInit = c->hostCftMode = NCCL_CONFIG_UNDEF_INT;
    c->nvlsHostMode = NCCL_CONFIG_UNDEF_INT;
  }
}

void takeIfUndef(int* field, int value) {
  if (*field == NCCL_CONFIG_UNDEF_INT) *field = value;
}

void overrideFromEnv(int* field, const char* env) {
  int64_t v = paramInt(env);
  if (v != NCCL_CONFIG_UNDEF_INT) *field = static_cast<int>(v);
}

ncclResult_t checkRange(const char* call, const char* field, int value, int lo, int hi) {
  if (value < lo || value > hi)
    return fail(ncclInvalidArgument, "%s: config.%s = %d is invalid (must be in [%d, %d])", call, field, value, lo,
                hi);
  return ncclSuccess;
}

}  // namespace

ncclResult_t resolveConfig(const char* call, const ncclConfig_t* user, const CommConfig* inherit, CommConfig* out) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  if (user) {
    if (user->magic != kConfigMagic)
      return fail(ncclInvalidArgument,
                  "%s: config magic 0x%x is not 0x%x: ncclConfig_t was not initialized with NCCL_CONFIG_INITIALIZER",
                  call, user->magic, kConfigMagic);
    if (user->size < offsetof(ncclConfig_t, blocking))
      return fail(ncclInvalidArgument, "%s: config.size = %zu is too small for an ncclConfig_t", call, user->size);
    std::memcpy(&c, user, user->size < sizeof(c) ? user->size : sizeof(c));
    forgetNewerFields(&c, user->version);
  }
  c.size = sizeof(c);
  c.magic = kConfigMagic;
  c.version = NCCL_VERSION_CODE;

  std::string netName = c.netName ? c.netName : "";
  std::string commName = c.commName ? c.commName : "";
  if (inherit) {
    const ncclConfig_t& p = inherit->base;
    takeIfUndef(&c.blocking, p.blocking);
    takeIfUndef(&c.cgaClusterSize, p.cgaClusterSize);
    takeIfUndef(&c.minCTAs, p.minCTAs);
    takeIfUndef(&c.maxCTAs, p.maxCTAs);
    takeIfUndef(&c.splitShare, p.splitShare);
    takeIfUndef(&c.trafficClass, p.trafficClass);
    takeIfUndef(&c.collnetEnable, p.collnetEnable);
    takeIfUndef(&c.CTAPolicy, p.CTAPolicy);
    takeIfUndef(&c.shrinkShare, p.shrinkShare);
    takeIfUndef(&c.nvlsCTAs, p.nvlsCTAs);
    takeIfUndef(&c.nChannelsPerNetPeer, p.nChannelsPerNetPeer);
    takeIfUndef(&c.nvlinkCentricSched, p.nvlinkCentricSched);
    takeIfUndef(&c.graphUsageMode, p.graphUsageMode);
    takeIfUndef(&c.numRmaCtx, p.numRmaCtx);
    takeIfUndef(&c.maxP2pPeers, p.maxP2pPeers);
    takeIfUndef(&c.graphStreamOrdering, p.graphStreamOrdering);
    takeIfUndef(&c.launchOrderImplicit, p.launchOrderImplicit);
    takeIfUndef(&c.numRmaSig, p.numRmaSig);
    takeIfUndef(&c.rmaEagerInit, p.rmaEagerInit);
    takeIfUndef(&c.hostCftMode, p.hostCftMode);
    takeIfUndef(&c.nvlsHostMode, p.nvlsHostMode);
    if (netName.empty()) netName = inherit->netName;
  }

  overrideFromEnv(&c.blocking, "NCCL_COMM_BLOCKING");
  overrideFromEnv(&c.cgaClusterSize, "NCCL_CGA_CLUSTER_SIZE");
  overrideFromEnv(&c.minCTAs, "NCCL_MIN_CTAS");
  overrideFromEnv(&c.maxCTAs, "NCCL_MAX_CTAS");
  overrideFromEnv(&c.splitShare, "NCCL_COMM_SPLIT_SHARE_RESOURCES");
  overrideFromEnv(&c.shrinkShare, "NCCL_COMM_SHRINK_SHARE_RESOURCES");
  overrideFromEnv(&c.collnetEnable, "NCCL_COLLNET_ENABLE");
  overrideFromEnv(&c.CTAPolicy, "NCCL_CTA_POLICY");
  overrideFromEnv(&c.nvlsCTAs, "NCCL_NVLS_NCHANNELS");
  overrideFromEnv(&c.nChannelsPerNetPeer, "NCCL_NCHANNELS_PER_NET_PEER");
  overrideFromEnv(&c.nvlinkCentricSched, "NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE");
  overrideFromEnv(&c.maxP2pPeers, "NCCL_P2P_MAX_PEERS");
  overrideFromEnv(&c.graphStreamOrdering, "NCCL_GRAPH_STREAM_ORDERING");
  overrideFromEnv(&c.launchOrderImplicit, "NCCL_LAUNCH_ORDER_IMPLICIT");
  overrideFromEnv(&c.numRmaCtx, "NCCL_NUM_RMA_CTX");
  overrideFromEnv(&c.rmaEagerInit, "NCCL_RMA_EAGER_INIT");
  std::string envNet = paramStr("NCCL_NET");
  if (!envNet.empty()) netName = envNet;
  if (c.cgaClusterSize != NCCL_CONFIG_UNDEF_INT && c.cgaClusterSize > 8) c.cgaClusterSize = 8;

  takeIfUndef(&c.blocking, 1);
  takeIfUndef(&c.cgaClusterSize, 4);
  takeIfUndef(&c.minCTAs, 1);
  takeIfUndef(&c.maxCTAs, 64);
  takeIfUndef(&c.splitShare, 0);
  takeIfUndef(&c.trafficClass, 0);
  takeIfUndef(&c.collnetEnable, 0);
  takeIfUndef(&c.CTAPolicy, NCCL_CTA_POLICY_DEFAULT);
  takeIfUndef(&c.shrinkShare, 0);
  takeIfUndef(&c.nvlsCTAs, 16);
  takeIfUndef(&c.nChannelsPerNetPeer, 1);
  takeIfUndef(&c.nvlinkCentricSched, 0);
  // 2.31 fields. None changes what the host backend does (no CUDA graphs, no one-sided RMA, no
  // CFT or NVLS hardware); they are resolved and validated so that a config NCCL accepts is
  // accepted here, inherited by split/shrink/grow, and visible in the communicator's config.
  takeIfUndef(&c.graphUsageMode, 2);  // graphs and eager launches may mix
  takeIfUndef(&c.numRmaCtx, 1);
  takeIfUndef(&c.maxP2pPeers, INT_MAX);  // no limit
  takeIfUndef(&c.graphStreamOrdering, 0);
  takeIfUndef(&c.launchOrderImplicit, 0);
  takeIfUndef(&c.numRmaSig, 1);
  takeIfUndef(&c.rmaEagerInit, 0);
  takeIfUndef(&c.hostCftMode, ncclHostCftDisable);
  takeIfUndef(&c.nvlsHostMode, ncclNvlsHostModeDisable);

  ACCL_CHECK(checkRange(call, "blocking", c.blocking, 0, 1));
  ACCL_CHECK(checkRange(call, "cgaClusterSize", c.cgaClusterSize, 0, 8));
  ACCL_CHECK(checkRange(call, "minCTAs", c.minCTAs, 1, 64));
  ACCL_CHECK(checkRange(call, "maxCTAs", c.maxCTAs, 1, 64));
  if (c.minCTAs > c.maxCTAs)
    return fail(ncclInvalidArgument, "%s: config.minCTAs = %d is larger than config.maxCTAs = %d", call, c.minCTAs,
                c.maxCTAs);
  ACCL_CHECK(checkRange(call, "splitShare", c.splitShare, 0, 1));
  ACCL_CHECK(checkRange(call, "trafficClass", c.trafficClass, 0, 255));
  ACCL_CHECK(checkRange(call, "collnetEnable", c.collnetEnable, 0, 1));
  ACCL_CHECK(checkRange(call, "CTAPolicy", c.CTAPolicy, 0, 2));
  ACCL_CHECK(checkRange(call, "shrinkShare", c.shrinkShare, 0, 1));
  ACCL_CHECK(checkRange(call, "nvlsCTAs", c.nvlsCTAs, 1, 64));
  ACCL_CHECK(checkRange(call, "nChannelsPerNetPeer", c.nChannelsPerNetPeer, 1, 64));
  ACCL_CHECK(checkRange(call, "nvlinkCentricSched", c.nvlinkCentricSched, 0, 1));
  ACCL_CHECK(checkRange(call, "graphUsageMode", c.graphUsageMode, 0, 2));
  ACCL_CHECK(checkRange(call, "numRmaCtx", c.numRmaCtx, 0, 64));
  ACCL_CHECK(checkRange(call, "maxP2pPeers", c.maxP2pPeers, 1, INT_MAX));
  ACCL_CHECK(checkRange(call, "graphStreamOrdering", c.graphStreamOrdering, 0, 1));
  ACCL_CHECK(checkRange(call, "launchOrderImplicit", c.launchOrderImplicit, 0, 1));
  ACCL_CHECK(checkRange(call, "numRmaSig", c.numRmaSig, 0, 1 << 20));
  ACCL_CHECK(checkRange(call, "rmaEagerInit", c.rmaEagerInit, 0, 1));
  ACCL_CHECK(checkRange(call, "hostCftMode", c.hostCftMode, ncclHostCftEnable, ncclHostCftFallback));
  // nvlsHostMode is a set of flags, or "everything off".
  if (c.nvlsHostMode != ncclNvlsHostModeDisable)
    ACCL_CHECK(checkRange(call, "nvlsHostMode", c.nvlsHostMode, 0,
                          ncclNvlsHostModeDisableTransport | ncclNvlsHostModeDisableSymmetricMultimem));

  out->base = c;
  out->netName = netName;
  out->commName = commName;
  out->pointIntoSelf();
  return ncclSuccess;
}

}  // namespace accl
