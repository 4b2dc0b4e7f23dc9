// The CUDA Prims on a real GPU (label gpu): ring all-reduce with one block per rank, the cases
// tests/simt/cuda_prims_ring_test.cc and cuda_prims_order_test.cc run on the CPU harness
// (closed-form sums; bit-for-bit equality with the host backend's reduction order), and a
// point-to-point batch whose receive comes before its send on both ranks. Skips without a CUDA
// device.
#include <gtest/gtest.h>

#include <string>

#include "cuda_prims_kernels.h"

namespace accl::gputest {
namespace {

class CudaPrimsGpuRing : public ::testing::TestWithParam<int> {};

TEST_P(CudaPrimsGpuRing, AllReduceMatchesClosedForm) {
  const int nranks = GetParam();
  for (ProtoId proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(241), size_t(1031), size_t(100003)}) {
      PrimsRingOutcome r = runPrimsRingAllReduceOnDevice(PrimsElem::kFloat, nranks, proto, count, false);
      if (!r.ran) GTEST_SKIP() << "no CUDA device";
      EXPECT_EQ(r.error, "") << "proto " << int(proto) << " count " << count;
    }
    EXPECT_EQ(runPrimsRingAllReduceOnDevice(PrimsElem::kFloat, nranks, proto, 523, true).error, "") << int(proto);
    EXPECT_EQ(runPrimsRingAllReduceOnDevice(PrimsElem::kUint8, nranks, proto, 301, false).error, "") << int(proto);
    EXPECT_EQ(runPrimsRingAllReduceOnDevice(PrimsElem::kDouble, nranks, proto, 133, false).error, "") << int(proto);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaPrimsGpuRing, ::testing::Values(1, 2, 3, 4, 8));

TEST(CudaPrimsGpuOrder, EveryWidthMatchesTheHostOrderBitForBit) {
  for (int nranks : {3, 4}) {
    for (ProtoId proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
      for (int c = 0; c <= int(PrimsOrderCase::kInt32SumPostDiv); ++c) {
        PrimsRingOutcome r = runPrimsHostOrderOnDevice(PrimsOrderCase(c), nranks, proto, 4099);
        if (!r.ran) GTEST_SKIP() << "no CUDA device";
        EXPECT_EQ(r.error, "") << nranks << " ranks, proto " << int(proto) << ", case " << c;
      }
    }
  }
}

// A send and a receive between the same two blocks in one batch: the receive is listed first on
// both ranks, so only separate warp groups let it complete (kernel-sized and 2-warp blocks).
TEST(CudaPrimsGpuP2p, ReceiveBeforeSendBothWays) {
  for (ProtoId proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
    for (int threads : {64, 512}) {
      for (size_t bytes : {size_t(0), size_t(1), size_t(4097), size_t(1) << 20}) {
        PrimsRingOutcome r = runPrimsP2pExchangeOnDevice(proto, bytes, threads);
        if (!r.ran) GTEST_SKIP() << "no CUDA device";
        EXPECT_EQ(r.error, "") << "proto " << int(proto) << ", " << threads << " threads, " << bytes << " bytes";
      }
    }
  }
}

}  // namespace
}  // namespace accl::gputest
