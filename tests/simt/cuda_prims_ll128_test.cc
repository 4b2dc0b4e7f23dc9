// The CUDA Prims' LL128 path with several line groups in flight per warp (kLL128Unroll, a ring's
// CudaPrims<T, Op, 1, 1>): ring all-reduce over slots of 80 lines (20 line groups), with 1 to 4
// data warps, at element counts whose steps carry every number of groups from 1 to 20 (so every
// remainder of the unroll and of unroll x data warps ends a step), checked against closed-form
// sums and guard elements.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "ring_run.h"

namespace accl {
namespace {

using primstest::runRingAllReduce;

constexpr size_t kSlotLines = 80;  // 20 groups of 4 lines: 2400 floats per step
constexpr size_t kPerGroup = simt::kLL128LinesPerWarp * kLL128LineDataBytes / sizeof(float);  // 120

// LL128 ring all-reduce of `count` floats, ring Prims, blocks of `dataWarps` + the peer warp.
std::string runLL128(int nranks, size_t count, size_t chunk, int dataWarps) {
  return runRingAllReduce<float, 1>(nranks, kProtoLL128, count, /*inPlace=*/false, /*repeats=*/1,
                                    (dataWarps + 1) * simt::kWarpSize, kSlotLines, chunk);
}

class CudaPrimsLL128Unroll : public ::testing::TestWithParam<int> {};  // data warps

// Two ranks, one step per rank's share: a share of g groups less 7 floats is a step of g groups
// whose last line is partial.
TEST_P(CudaPrimsLL128Unroll, EveryGroupCountOfAStep) {
  for (size_t g = 1; g <= kSlotLines / simt::kLL128LinesPerWarp; ++g)
    EXPECT_EQ(runLL128(2, 2 * (g * kPerGroup - 7), 0, GetParam()), "") << g << " groups per step";
}

// Three ranks, many steps of uneven sizes: 0, 1, odd, a partial last group, several chunks.
TEST_P(CudaPrimsLL128Unroll, AwkwardCountsOverManySteps) {
  for (size_t count : {size_t(0), size_t(1), size_t(31), size_t(241), size_t(1451), size_t(9001)})
    for (size_t chunk : {size_t(150), size_t(0)})
      EXPECT_EQ(runLL128(3, count, chunk, GetParam()), "") << "count " << count << ", chunk " << chunk;
}

INSTANTIATE_TEST_SUITE_P(DataWarps, CudaPrimsLL128Unroll, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "dataWarps";
                         });

}  // namespace
}  // namespace accl
