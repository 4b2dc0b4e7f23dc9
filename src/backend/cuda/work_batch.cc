// Work batching: Plan -> KernelArgs (+ spill) and back (see work_batch.h).
#include "backend/cuda/work_batch.h"

#include <cstring>

#include "backend/cuda/work_codec.h"
#include "device/common/dtypes.h"
#include "tuner/algo_proto_filter.h"
#include "util/check.h"

namespace accl {
namespace {

// Copy collectives and transfers move bytes: counts scale by the element size.
size_t byteScale(int coll, ncclDataType_t type) { return devCollIsCopy(coll) ? dtypeSize(type) : 1; }

uint8_t kindByte(DevItemKind kind, ncclDataType_t type) {
  return static_cast<uint8_t>(unsigned(kind) | (unsigned(type) << 4));
}

}  // namespace

ncclResult_t packColl(const CollWork& w, bool subset, DevWorkItem* out) {
  const char* api = collApiName(w.func, "collective");
  if (!dtypeValid(w.type)) return fail(ncclInvalidArgument, "%s: datatype %d is not valid", api, int(w.type));
  const int id = devFuncFor(w.func, int(w.op.kind), w.type, w.algo, w.proto);
  if (id < 0)
    return fail(ncclInvalidUsage,
                "%s: the CUDA backend has no kernel for algorithm %s, protocol %s, type %s, op %s "
                "(CUDA schedules: Ring for every collective, Tree for ncclAllReduce)",
                api, algoName(w.algo), protoName(w.proto), dtypeName(w.type), devRedOpKindName(w.op.kind));
  if (!(subset ? devFuncInSubset(id) : devFuncInFullSet(id)))
    return fail(ncclInvalidUsage,
                "%s: type %s with op %s is not in this library's CUDA kernels (built with ACCL_KERNEL_SUBSET=ON: "
                "float32/bfloat16 with sum only; rebuild with -DACCL_KERNEL_SUBSET=OFF for every type and op)",
                api, dtypeName(w.type), devRedOpKindName(w.op.kind));
  *out = encodeCollItem(w, id, byteScale(w.func, w.type));
  return ncclSuccess;
}

ncclResult_t packP2p(const P2pWork& w, bool batchEnd, DevWorkItem* out) {
  if (!dtypeValid(w.type)) return fail(ncclInvalidArgument, "ncclSend/ncclRecv: datatype %d is not valid", int(w.type));
  const int id = devFuncFor(kFuncSendRecv, int(DevRedOpKind::kSum), w.type, kAlgoRing, w.proto);
  if (id < 0) return fail(ncclInvalidUsage, "ncclSend/ncclRecv: protocol %d has no CUDA kernel", int(w.proto));
  const size_t scale = dtypeSize(w.type);
  DevWorkItem it{};
  it.funcId = static_cast<uint16_t>(id);
  it.kind = kindByte(w.isSend ? kDevItemSend : kDevItemRecv, w.type);
  it.flags = batchEnd ? kDevItemBatchEnd : 0;
  it.rootOrPeer = w.peer;
  it.sendbuff = w.sendbuff;
  it.recvbuff = w.recvbuff;
  it.chanOffset = w.chanOffset * scale;
  it.chanCount = w.chanCount * scale;
  it.chunkElems = w.chunkElems * scale;
  *out = it;
  return ncclSuccess;
}

CollWork unpackColl(const DevWorkItem& it) {
  const ncclDataType_t type = static_cast<ncclDataType_t>(it.userType());
  CollWork w = decodeCollItem(it, byteScale(devFuncKey(it.funcId).coll, type));
  w.type = type;
  return w;
}

P2pWork unpackP2p(const DevWorkItem& it) {
  const ncclDataType_t type = static_cast<ncclDataType_t>(it.userType());
  const size_t scale = dtypeSize(type);
  P2pWork w{};
  w.isSend = it.itemKind() == kDevItemSend;
  w.peer = it.rootOrPeer;
  w.proto = static_cast<ProtoId>(devFuncKey(it.funcId).proto);
  w.type = type;
  w.sendbuff = w.isSend ? it.sendbuff : nullptr;
  w.recvbuff = w.isSend ? nullptr : it.recvbuff;
  w.chanOffset = it.chanOffset / scale;
  w.chanCount = it.chanCount / scale;
  w.chunkElems = it.chunkElems / scale;
  return w;
}

ncclResult_t packPlan(const Plan& plan, const PackOptions& options, PackedLaunch* out) {
  if (plan.nChannelsUsed > kArgMaxChannels || plan.nChannelsUsed > int(plan.channels.size()))
    return fail(ncclInternalError, "CUDA launch: %d channels (at most %d)", plan.nChannelsUsed, kArgMaxChannels);
  size_t total = 0;
  for (int c = 0; c < plan.nChannelsUsed; ++c)
    for (const PlanItem& pi : plan.channels[c]) total += pi.isColl ? 1 : pi.p2p.size();
  if (total > 0xffff) return fail(ncclInternalError, "CUDA launch: %zu work items (at most 65535)", total);

  KernelArgs& args = out->args;
  memset(&args, 0, sizeof args);
  const bool spill = total > size_t(options.inlineCapacity < 0 ? 0 : options.inlineCapacity);
  out->spill.clear();
  if (spill) out->spill.resize(total);
  DevWorkItem* dst = spill ? out->spill.data() : args.items;

  args.header.magic = kKernelArgsMagic;
  args.header.nChannels = static_cast<uint16_t>(plan.nChannelsUsed);
  args.header.nItems = static_cast<uint16_t>(total);
  size_t n = 0;
  for (int c = 0; c < plan.nChannelsUsed; ++c) {
    args.header.channels[c].first = static_cast<uint16_t>(n);
    for (const PlanItem& pi : plan.channels[c]) {
      if (pi.isColl) {
        if (pi.oneShot)
          return fail(ncclInvalidUsage, "%s: the one-round all-reduce (OneShot) is host-only; the CUDA backend has no kernel",
                      collApiName(pi.coll.func, "collective"));
        ACCL_CHECK(packColl(pi.coll, options.subset, &dst[n++]));
        continue;
      }
      for (size_t i = 0; i < pi.p2p.size(); ++i) ACCL_CHECK(packP2p(pi.p2p[i], i + 1 == pi.p2p.size(), &dst[n++]));
    }
    args.header.channels[c].count = static_cast<uint16_t>(n - args.header.channels[c].first);
  }
  return ncclSuccess;
}

ncclResult_t unpackPlan(const KernelArgsHeader& h, const DevWorkItem* items, Plan* out) {
  if (h.magic != kKernelArgsMagic || h.nChannels > kArgMaxChannels)
    return fail(ncclInternalError, "CUDA launch arguments: bad header (magic %#x, %u channels)", h.magic, h.nChannels);
  out->reset(h.nChannels);
  out->nChannelsUsed = h.nChannels;
  for (int c = 0; c < h.nChannels; ++c) {
    const DevChannelRange r = h.channels[c];
    if (size_t(r.first) + r.count > h.nItems)
      return fail(ncclInternalError, "CUDA launch arguments: channel %d range [%u, +%u) past %u items", c, r.first,
                  r.count, h.nItems);
    std::vector<P2pWork> batch;
    for (int i = r.first; i < r.first + r.count; ++i) {
      const DevWorkItem& it = items[i];
      if (it.itemKind() == kDevItemColl) {
        PlanItem pi;
        pi.isColl = true;
        pi.coll = unpackColl(it);
        out->channels[c].push_back(std::move(pi));
        continue;
      }
      batch.push_back(unpackP2p(it));
      if (it.flags & kDevItemBatchEnd) {
        PlanItem pi;
        pi.isColl = false;
        pi.p2p = std::move(batch);
        batch.clear();
        out->channels[c].push_back(std::move(pi));
      }
    }
    if (!batch.empty()) return fail(ncclInternalError, "CUDA launch arguments: channel %d ends inside a p2p batch", c);
  }
  return ncclSuccess;
}

}  // namespace accl
