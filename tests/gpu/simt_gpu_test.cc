// The device-primitives layer on a real GPU (label gpu): the kernels the CPU harness test runs
// (tests/simt), here through simt_kernels.cu. Each test skips itself without a CUDA device.
#include <gtest/gtest.h>

#include <string>

#include "simt_kernels.h"

namespace accl::simttest {
namespace {

class SimtGpu : public ::testing::TestWithParam<SimtGpuCheck> {};

TEST_P(SimtGpu, KernelFindsNoErrors) {
  SimtGpuOutcome r = runSimtCheckOnDevice(GetParam());
  if (!r.ran) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(r.detail.empty()) << r.detail;
  EXPECT_EQ(r.errors, 0u);
}

std::string checkName(const ::testing::TestParamInfo<SimtGpuCheck>& info) {
  static const char* const kNames[] = {"Indices", "WarpOps", "NamedBarriers", "VectorCopy", "Handoff",
                                       "LLWord",  "LLLine",  "LL128",         "Smoke"};
  return kNames[int(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Primitives, SimtGpu,
                         ::testing::Values(SimtGpuCheck::kIndices, SimtGpuCheck::kWarpOps, SimtGpuCheck::kNamedBarriers,
                                           SimtGpuCheck::kVectorCopy, SimtGpuCheck::kHandoff, SimtGpuCheck::kLLWord,
                                           SimtGpuCheck::kLLLine, SimtGpuCheck::kLL128, SimtGpuCheck::kSmoke),
                         checkName);

}  // namespace
}  // namespace accl::simttest
