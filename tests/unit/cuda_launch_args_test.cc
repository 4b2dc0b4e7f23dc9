// The CUDA launch path's host side (src/backend/cuda/work_batch.h, kernel_args.h): a plan packed
// into kernel arguments — items per channel, the spill threshold, the fixed argument layout, and
// decode(pack(plan)) == plan. No GPU needed: runs in every build.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "backend/cuda/work_batch.h"
#include "device/common/dtypes.h"
#include "util/last_error.h"

namespace accl {
namespace {

CollWork coll(FuncId func, ncclDataType_t type, DevRedOpKind op, AlgoId algo, ProtoId proto, size_t salt) {
  CollWork w{};
  w.func = func;
  w.algo = algo;
  w.proto = proto;
  w.type = type;
  w.op.kind = op;
  if (op == DevRedOpKind::kSumPostDiv) w.op.arg = 3;
  if (op == DevRedOpKind::kPreMulSum) w.op.arg = 0x3f000000u;
  w.sendbuff = reinterpret_cast<const void*>(uintptr_t(0x10000 + 256 * salt));
  w.recvbuff = reinterpret_cast<void*>(uintptr_t(0x90000 + 256 * salt));
  w.count = 1000 + salt;
  w.root = int(salt % 3);
  w.chanOffset = 7 * salt;
  w.chanCount = 13 + salt;
  w.chunkElems = 4 + salt % 5;
  return w;
}

PlanItem collItem(const CollWork& w) {
  PlanItem pi;
  pi.isColl = true;
  pi.coll = w;
  return pi;
}

PlanItem p2pBatch(int nTransfers, size_t salt) {
  PlanItem pi;
  pi.isColl = false;
  for (int i = 0; i < nTransfers; ++i) {
    P2pWork w{};
    w.isSend = (i % 2) == 0;
    w.peer = i + 1;
    w.proto = static_cast<ProtoId>(i % kNumProtos);
    w.type = i % 3 == 0 ? ncclFloat64 : ncclInt8;
    if (w.isSend) w.sendbuff = reinterpret_cast<const void*>(uintptr_t(0x5000 + salt * 64 + i));
    else w.recvbuff = reinterpret_cast<void*>(uintptr_t(0x7000 + salt * 64 + i));
    w.chanOffset = salt + i;
    w.chanCount = i == 0 ? 0 : 17 * i + 1;  // a zero-byte transfer too
    w.chunkElems = 3 + i;
    pi.p2p.push_back(w);
  }
  return pi;
}

// A plan of `nChannels` channels with `perChannel` float sum ring all-reduces each.
Plan uniformPlan(int nChannels, int perChannel) {
  Plan plan;
  plan.reset(nChannels);
  plan.nChannelsUsed = nChannels;
  for (int c = 0; c < nChannels; ++c)
    for (int i = 0; i < perChannel; ++i)
      plan.channels[c].push_back(
          collItem(coll(kFuncAllReduce, ncclFloat32, DevRedOpKind::kSum, kAlgoRing, kProtoSimple, c * 100 + i)));
  return plan;
}

void expectSameColl(const CollWork& a, const CollWork& b) {
  EXPECT_EQ(a.func, b.func);
  EXPECT_EQ(a.algo, b.algo);
  EXPECT_EQ(a.proto, b.proto);
  EXPECT_EQ(a.type, b.type);
  EXPECT_TRUE(a.op == b.op);
  EXPECT_EQ(a.sendbuff, b.sendbuff);
  EXPECT_EQ(a.recvbuff, b.recvbuff);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.chanOffset, b.chanOffset);
  EXPECT_EQ(a.chanCount, b.chanCount);
  EXPECT_EQ(a.chunkElems, b.chunkElems);
}

void expectSameP2p(const P2pWork& a, const P2pWork& b) {
  EXPECT_EQ(a.isSend, b.isSend);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(a.proto, b.proto);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.sendbuff, b.sendbuff);
  EXPECT_EQ(a.recvbuff, b.recvbuff);
  EXPECT_EQ(a.chanOffset, b.chanOffset);
  EXPECT_EQ(a.chanCount, b.chanCount);
  EXPECT_EQ(a.chunkElems, b.chunkElems);
}

void expectSamePlan(const Plan& a, const Plan& b) {
  ASSERT_EQ(a.nChannelsUsed, b.nChannelsUsed);
  for (int c = 0; c < a.nChannelsUsed; ++c) {
    ASSERT_EQ(a.channels[c].size(), b.channels[c].size()) << "channel " << c;
    for (size_t i = 0; i < a.channels[c].size(); ++i) {
      const PlanItem& x = a.channels[c][i];
      const PlanItem& y = b.channels[c][i];
      ASSERT_EQ(x.isColl, y.isColl);
      if (x.isColl) {
        expectSameColl(x.coll, y.coll);
        continue;
      }
      ASSERT_EQ(x.p2p.size(), y.p2p.size());
      for (size_t j = 0; j < x.p2p.size(); ++j) expectSameP2p(x.p2p[j], y.p2p[j]);
    }
  }
}

TEST(CudaLaunchArgs, LayoutIsFixed) {
  EXPECT_EQ(sizeof(KernelArgs), 4096u);
  EXPECT_EQ(sizeof(DevWorkItem), 64u);
  EXPECT_EQ(alignof(DevWorkItem), 16u);
  EXPECT_EQ(offsetof(KernelArgsHeader, magic), 0u);
  EXPECT_EQ(offsetof(KernelArgsHeader, nChannels), 4u);
  EXPECT_EQ(offsetof(KernelArgsHeader, nItems), 6u);
  EXPECT_EQ(offsetof(KernelArgsHeader, spill), 8u);
  EXPECT_EQ(offsetof(KernelArgsHeader, comm), 16u);
  EXPECT_EQ(offsetof(KernelArgsHeader, launchId), 24u);
  EXPECT_EQ(offsetof(KernelArgsHeader, channels), 64u);
  EXPECT_EQ(offsetof(KernelArgs, items), 192u);
  EXPECT_EQ(kArgInlineItems, 61);
  EXPECT_EQ(offsetof(DevWorkItem, funcId), 0u);
  EXPECT_EQ(offsetof(DevWorkItem, kind), 2u);
  EXPECT_EQ(offsetof(DevWorkItem, flags), 3u);
  EXPECT_EQ(offsetof(DevWorkItem, rootOrPeer), 4u);
  EXPECT_EQ(offsetof(DevWorkItem, recvbuff), 24u);
  EXPECT_EQ(offsetof(DevWorkItem, count), 32u);
  EXPECT_EQ(offsetof(DevWorkItem, chanOffset), 40u);
  EXPECT_EQ(offsetof(DevWorkItem, chanCount), 48u);
  EXPECT_EQ(offsetof(DevWorkItem, chunkElems), 56u);
}

TEST(CudaLaunchArgs, ItemsPerChannelAreContiguousRanges) {
  // 32: kMaxChannels, every channel a CUDA communicator may have (two items each spill).
  for (int nChannels : {1, 3, 16, 32}) {
    for (int per : {1, 2, 3}) {
      SCOPED_TRACE("channels " + std::to_string(nChannels) + " items " + std::to_string(per));
      Plan plan = uniformPlan(nChannels, per);
      PackedLaunch packed;
      ASSERT_EQ(packPlan(plan, PackOptions{}, &packed), ncclSuccess);
      const KernelArgsHeader& h = packed.args.header;
      EXPECT_EQ(h.magic, kKernelArgsMagic);
      EXPECT_EQ(h.nChannels, nChannels);
      EXPECT_EQ(h.nItems, nChannels * per);
      const bool spills = nChannels * per > kArgInlineItems;
      EXPECT_EQ(h.spill, nullptr);  // the backend sets it for a spill
      EXPECT_EQ(packed.spilled(), spills);
      for (int c = 0; c < nChannels; ++c) {
        EXPECT_EQ(h.channels[c].first, c * per);
        EXPECT_EQ(h.channels[c].count, per);
        for (int i = 0; i < per; ++i) EXPECT_EQ(packed.items()[c * per + i].chanOffset, size_t(7 * (c * 100 + i)));
      }
      for (int c = nChannels; c < kArgMaxChannels; ++c) EXPECT_EQ(h.channels[c].count, 0);
    }
  }
}

TEST(CudaLaunchArgs, EmptyChannelsAndEmptyPlan) {
  Plan plan;
  plan.reset(4);
  plan.nChannelsUsed = 4;
  plan.channels[2].push_back(collItem(coll(kFuncAllGather, ncclInt32, DevRedOpKind::kSum, kAlgoRing, kProtoLL, 1)));
  PackedLaunch packed;
  ASSERT_EQ(packPlan(plan, PackOptions{}, &packed), ncclSuccess);
  EXPECT_EQ(packed.args.header.nItems, 1);
  EXPECT_EQ(packed.args.header.channels[0].count, 0);
  EXPECT_EQ(packed.args.header.channels[2].first, 0);
  EXPECT_EQ(packed.args.header.channels[2].count, 1);
  EXPECT_EQ(packed.args.header.channels[3].first, 1);
  EXPECT_EQ(packed.args.header.channels[3].count, 0);

  Plan none;
  none.reset(1);
  ASSERT_EQ(packPlan(none, PackOptions{}, &packed), ncclSuccess);
  EXPECT_EQ(packed.args.header.nChannels, 0);
  EXPECT_EQ(packed.args.header.nItems, 0);
}

TEST(CudaLaunchArgs, SpillsExactlyPastTheInlineCapacity) {
  // 61 items fit; 62 spill, and then every item is in the spill array, in channel order.
  Plan fits = uniformPlan(1, kArgInlineItems);
  PackedLaunch packed;
  ASSERT_EQ(packPlan(fits, PackOptions{}, &packed), ncclSuccess);
  EXPECT_FALSE(packed.spilled());

  Plan spills = uniformPlan(2, kArgInlineItems / 2 + 1);  // 2 x 31 = 62
  ASSERT_EQ(packPlan(spills, PackOptions{}, &packed), ncclSuccess);
  ASSERT_TRUE(packed.spilled());
  EXPECT_EQ(packed.spill.size(), 62u);
  EXPECT_EQ(packed.args.header.nItems, 62);
  EXPECT_EQ(packed.args.header.channels[1].first, 31);
  EXPECT_EQ(packed.items(), packed.spill.data());
  EXPECT_EQ(packed.spill[31].chanOffset, size_t(7 * 100));

  // A lower threshold (what a test or a smaller parameter budget would use).
  PackOptions tiny;
  tiny.inlineCapacity = 3;
  ASSERT_EQ(packPlan(uniformPlan(1, 3), tiny, &packed), ncclSuccess);
  EXPECT_FALSE(packed.spilled());
  ASSERT_EQ(packPlan(uniformPlan(1, 4), tiny, &packed), ncclSuccess);
  EXPECT_TRUE(packed.spilled());
  tiny.inlineCapacity = 0;
  ASSERT_EQ(packPlan(uniformPlan(1, 1), tiny, &packed), ncclSuccess);
  EXPECT_TRUE(packed.spilled());
}

TEST(CudaLaunchArgs, RoundTripRebuildsThePlan) {
  for (int inlineCap : {kArgInlineItems, 5}) {
    SCOPED_TRACE("inline capacity " + std::to_string(inlineCap));
    Plan plan;
    plan.reset(5);
    plan.nChannelsUsed = 5;
    size_t salt = 0;
    plan.channels[0].push_back(collItem(coll(kFuncAllReduce, ncclBfloat16, DevRedOpKind::kSum, kAlgoTree, kProtoLL128, ++salt)));
    plan.channels[0].push_back(p2pBatch(4, ++salt));
    plan.channels[0].push_back(collItem(coll(kFuncBroadcast, ncclFloat64, DevRedOpKind::kSum, kAlgoRing, kProtoLL, ++salt)));
    plan.channels[1].push_back(collItem(coll(kFuncReduce, ncclInt64, DevRedOpKind::kSumPostDiv, kAlgoRing, kProtoSimple, ++salt)));
    plan.channels[1].push_back(p2pBatch(1, ++salt));
    plan.channels[1].push_back(p2pBatch(3, ++salt));
    plan.channels[2].push_back(collItem(coll(kFuncAllGather, ncclFloat16, DevRedOpKind::kSum, kAlgoRing, kProtoSimple, ++salt)));
    plan.channels[2].push_back(collItem(coll(kFuncReduceScatter, ncclFloat8e4m3, DevRedOpKind::kPreMulSum, kAlgoRing, kProtoLL, ++salt)));
    CollWork ptrScalar = coll(kFuncAllReduce, ncclFloat32, DevRedOpKind::kPreMulSum, kAlgoRing, kProtoSimple, ++salt);
    ptrScalar.op.scalarIsPtr = true;
    ptrScalar.op.arg = 0x7fff12345670ull;
    plan.channels[4].push_back(collItem(ptrScalar));
    plan.channels[4].push_back(collItem(coll(kFuncAllReduce, ncclUint8, DevRedOpKind::kMax, kAlgoRing, kProtoLL, ++salt)));

    PackOptions opts;
    opts.inlineCapacity = inlineCap;
    opts.subset = false;
    PackedLaunch packed;
    ASSERT_EQ(packPlan(plan, opts, &packed), ncclSuccess);
    EXPECT_EQ(packed.spilled(), inlineCap < 15);
    EXPECT_EQ(packed.args.header.nItems, 15);
    Plan back;
    ASSERT_EQ(unpackPlan(packed.args.header, packed.items(), &back), ncclSuccess);
    expectSamePlan(plan, back);
  }
}

TEST(CudaLaunchArgs, CopyCollectivesAndTransfersTravelInBytes) {
  PackOptions opts;
  opts.subset = false;
  DevWorkItem it;
  ASSERT_EQ(packColl(coll(kFuncBroadcast, ncclFloat32, DevRedOpKind::kSum, kAlgoRing, kProtoLL, 2), opts.subset, &it),
            ncclSuccess);
  const DevFuncKey k = devFuncKey(it.funcId);
  EXPECT_EQ(k.type, int(ncclUint8));
  EXPECT_EQ(k.coll, int(kFuncBroadcast));
  EXPECT_EQ(k.proto, int(kProtoLL));
  EXPECT_EQ(it.userType(), int(ncclFloat32));
  EXPECT_EQ(it.count, 4u * 1002);
  EXPECT_EQ(it.chanCount, 4u * 15);
  EXPECT_EQ(it.chunkElems, 4u * 6);

  ASSERT_EQ(packColl(coll(kFuncAllReduce, ncclFloat32, DevRedOpKind::kSum, kAlgoRing, kProtoLL, 2), opts.subset, &it),
            ncclSuccess);
  EXPECT_EQ(devFuncKey(it.funcId).type, int(ncclFloat32));
  EXPECT_EQ(it.count, 1002u);  // reductions keep elements

  P2pWork w{};
  w.isSend = false;
  w.peer = 6;
  w.proto = kProtoSimple;
  w.type = ncclInt64;
  w.chanCount = 9;
  w.chunkElems = 2;
  ASSERT_EQ(packP2p(w, true, &it), ncclSuccess);
  EXPECT_EQ(it.itemKind(), int(kDevItemRecv));
  EXPECT_EQ(it.chanCount, 72u);
  EXPECT_EQ(it.rootOrPeer, 6);
  EXPECT_TRUE(it.flags & kDevItemBatchEnd);
  EXPECT_EQ(devFuncKey(it.funcId).coll, int(kFuncSendRecv));
}

TEST(CudaLaunchArgs, OutsideTheSubsetFailsNamingTypeAndOp) {
  Plan plan;
  plan.reset(1);
  plan.nChannelsUsed = 1;
  plan.channels[0].push_back(collItem(coll(kFuncAllReduce, ncclInt32, DevRedOpKind::kProd, kAlgoRing, kProtoSimple, 1)));
  PackOptions subset;
  subset.subset = true;
  PackedLaunch packed;
  EXPECT_EQ(packPlan(plan, subset, &packed), ncclInvalidUsage);
  const std::string msg = lastErrorText();
  EXPECT_NE(msg.find("ncclAllReduce"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Prod"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ACCL_KERNEL_SUBSET"), std::string::npos) << msg;

  PackOptions full;
  full.subset = false;
  EXPECT_EQ(packPlan(plan, full, &packed), ncclSuccess);
  // float32 sum and the copy collectives of any type are in the subset.
  plan.channels[0][0].coll = coll(kFuncAllReduce, ncclFloat32, DevRedOpKind::kSum, kAlgoTree, kProtoLL128, 1);
  plan.channels[0].push_back(collItem(coll(kFuncAllGather, ncclInt64, DevRedOpKind::kSum, kAlgoRing, kProtoLL, 2)));
  EXPECT_EQ(packPlan(plan, subset, &packed), ncclSuccess);
}

TEST(CudaLaunchArgs, NoKernelForHostOnlyOrUnscheduledAlgorithms) {
  Plan plan;
  plan.reset(1);
  plan.nChannelsUsed = 1;
  plan.channels[0].push_back(collItem(coll(kFuncAllReduce, ncclFloat32, DevRedOpKind::kSum, kAlgoRing, kProtoSimple, 1)));
  plan.channels[0][0].oneShot = true;
  PackedLaunch packed;
  EXPECT_EQ(packPlan(plan, PackOptions{}, &packed), ncclInvalidUsage);
  plan.channels[0][0].oneShot = false;
  plan.channels[0][0].coll.algo = kAlgoPat;
  EXPECT_EQ(packPlan(plan, PackOptions{}, &packed), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("PAT"), std::string::npos) << lastErrorText();
  // Tree exists only for all-reduce.
  plan.channels[0][0].coll = coll(kFuncReduce, ncclFloat32, DevRedOpKind::kSum, kAlgoTree, kProtoSimple, 1);
  EXPECT_EQ(packPlan(plan, PackOptions{}, &packed), ncclInvalidUsage);
}

TEST(CudaLaunchArgs, UnpackRejectsInconsistentHeaders) {
  PackedLaunch packed;
  ASSERT_EQ(packPlan(uniformPlan(2, 2), PackOptions{}, &packed), ncclSuccess);
  Plan back;
  KernelArgsHeader h = packed.args.header;
  h.magic = 0;
  EXPECT_EQ(unpackPlan(h, packed.items(), &back), ncclInternalError);
  h = packed.args.header;
  h.channels[1].count = 3;  // past nItems
  EXPECT_EQ(unpackPlan(h, packed.items(), &back), ncclInternalError);
}

TEST(CudaLaunchArgs, TooManyChannelsIsAnError) {
  Plan plan = uniformPlan(kArgMaxChannels + 1, 1);
  PackedLaunch packed;
  EXPECT_EQ(packPlan(plan, PackOptions{}, &packed), ncclInternalError);
}

}  // namespace
}  // namespace accl
