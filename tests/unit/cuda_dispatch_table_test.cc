// The CUDA kernels' function ids (src/backend/cuda/dev_func.h): the id <-> key encoding, the size
// of the full and ACCL_KERNEL_SUBSET sets in closed form, and coverage: every (collective, op,
// type, algorithm, protocol) the tuner may pick for a CUDA communicator has a kernel in the full
// set. The kernel translation units instantiate exactly the ids devFuncBuilt() names, so this
// host-side table is the device table's specification. No GPU needed.
#include <gtest/gtest.h>

#include "backend/cuda/dev_func.h"
#include "device/common/dtypes.h"
#include "tuner/cost_model.h"
#include "tuner/tuner.h"

namespace accl {
namespace {

constexpr int kReducingTypeOps = 12 * 5;  // per type: sum prod max min + (PreMulSum | SumPostDiv)

TEST(CudaDispatchTable, IdsRoundTrip) {
  for (int id = 0; id < kDevNumFuncs; ++id) {
    const DevFuncKey k = devFuncKey(id);
    ASSERT_EQ(devFuncId(k), id);
    ASSERT_LT(k.coll, kDevNumColls);
    ASSERT_LT(k.op, kDevNumOps);
    ASSERT_LT(k.type, kDevNumTypes);
    ASSERT_LT(k.algo, kDevNumAlgos);
    ASSERT_LT(k.proto, kNumProtos);
  }
  EXPECT_EQ(kDevNumFuncs, 2592);
  EXPECT_LE(kDevNumFuncs, 0xffff);  // DevWorkItem::funcId is 16 bits
}

TEST(CudaDispatchTable, SetSizesInClosedForm) {
  // Full: Reduce, ReduceScatter, AllReduce-ring and AllReduce-tree for every (type, op) and
  // protocol, plus Broadcast, AllGather and SendRecv once per protocol (bytes).
  EXPECT_EQ(devFuncCount(false), 4 * kReducingTypeOps * kNumProtos + 3 * kNumProtos);  // 729
  // Subset: the same schedules for float32 and bfloat16 with sum.
  EXPECT_EQ(devFuncCount(true), 4 * 2 * kNumProtos + 3 * kNumProtos);  // 33
  for (int id = 0; id < kDevNumFuncs; ++id) {
    if (devFuncInSubset(id)) {
      EXPECT_TRUE(devFuncInFullSet(id)) << id;
    }
  }
}

TEST(CudaDispatchTable, EveryTunerChoiceHasAKernelInTheFullSet) {
  TunerTopo cuda;
  cuda.host = false;
  cuda.sm = 90;
  cuda.ll128Supported = true;
  int checked = 0;
  for (int func = 0; func < kNumCollFuncs; ++func) {
    for (int algo = 0; algo < kNumTunerAlgos; ++algo) {
      for (int proto = 0; proto < kNumProtos; ++proto) {
        if (!backendImplements(cuda, static_cast<FuncId>(func), algo, proto)) continue;
        // Only the algorithms with a schedule: NVLS, CollNet and PAT are priced by the GPU model
        // but never handed to the CUDA backend (their items would fail to pack: ncclInvalidUsage,
        // tested in cuda_launch_args_test).
        ASSERT_TRUE(algo == kAlgoRing || algo == kAlgoTree) << "algorithm " << algo;
        for (int type = 0; type < ncclNumTypes; ++type) {
          for (int op = 0; op < kDevNumOps; ++op) {
            if (!devOpValidForType(op, type)) continue;
            const int id = devFuncFor(func, op, type, algo, proto);
            ASSERT_GE(id, 0) << "func " << func << " algo " << algo << " proto " << proto << " type " << type << " op "
                             << op;
            EXPECT_TRUE(devFuncInFullSet(id));
            ++checked;
          }
        }
      }
    }
  }
  // Ring: 5 collectives; Tree: AllReduce; every protocol; 12 types x 5 valid ops.
  EXPECT_EQ(checked, (5 + 1) * kNumProtos * kReducingTypeOps);
  // Point-to-point: every type and protocol.
  for (int type = 0; type < ncclNumTypes; ++type)
    for (int proto = 0; proto < kNumProtos; ++proto)
      EXPECT_TRUE(devFuncInFullSet(devFuncFor(kFuncSendRecv, 0, type, kAlgoRing, proto)));
}

TEST(CudaDispatchTable, SubsetHasFloatAndBf16SumForEveryAlgorithmAndProtocol) {
  for (int proto = 0; proto < kNumProtos; ++proto) {
    for (int type : {int(ncclFloat32), int(ncclBfloat16)}) {
      for (int func = 0; func < kNumCollFuncs; ++func)
        EXPECT_TRUE(devFuncInSubset(devFuncFor(func, int(DevRedOpKind::kSum), type, kAlgoRing, proto)));
      EXPECT_TRUE(devFuncInSubset(devFuncFor(kFuncAllReduce, int(DevRedOpKind::kSum), type, kAlgoTree, proto)));
    }
    EXPECT_FALSE(devFuncInSubset(devFuncFor(kFuncAllReduce, int(DevRedOpKind::kSum), ncclFloat16, kAlgoRing, proto)));
    EXPECT_FALSE(devFuncInSubset(devFuncFor(kFuncAllReduce, int(DevRedOpKind::kMax), ncclFloat32, kAlgoRing, proto)));
  }
}

TEST(CudaDispatchTable, InvalidCombinationsHaveNoId) {
  EXPECT_EQ(devFuncFor(kFuncAllReduce, int(DevRedOpKind::kSumPostDiv), ncclFloat32, kAlgoRing, kProtoSimple), -1);
  EXPECT_EQ(devFuncFor(kFuncAllReduce, int(DevRedOpKind::kPreMulSum), ncclInt32, kAlgoRing, kProtoSimple), -1);
  EXPECT_EQ(devFuncFor(kFuncReduceScatter, 0, ncclFloat32, kAlgoTree, kProtoSimple), -1);
  EXPECT_EQ(devFuncFor(kFuncAllReduce, 0, ncclNumTypes, kAlgoRing, kProtoSimple), -1);
  EXPECT_EQ(devFuncFor(kFuncAllReduce, 0, ncclFloat32, kAlgoRing, kNumProtos), -1);
  EXPECT_EQ(devFuncFor(-1, 0, ncclFloat32, kAlgoRing, kProtoSimple), -1);
  EXPECT_EQ(devFuncFor(kFuncAllReduce, 0, ncclFloat32, kAlgoOneShot, kProtoSimple), -1);
  // Copy collectives map every type and op to one id per protocol.
  EXPECT_EQ(devFuncFor(kFuncAllGather, int(DevRedOpKind::kMax), ncclFloat64, kAlgoRing, kProtoLL),
            devFuncFor(kFuncAllGather, 0, ncclInt8, kAlgoRing, kProtoLL));
}

}  // namespace
}  // namespace accl
