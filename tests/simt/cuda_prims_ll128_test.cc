// The CUDA Prims' LL128 path with several line groups in flight per warp (kLL128Unroll): ring
// all-reduce over slots of 80 lines (20 line groups), with 1 to 4 data warps, at element counts
// whose steps carry every number of groups from 1 to 20 (so every remainder of the unroll and of
// unroll x data warps ends a step), checked against closed-form sums and guard elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algos/ring_all_reduce.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"

namespace accl {
namespace {

using primstest::closedFormSum;
using primstest::contribution;
using primstest::TestNet;

constexpr size_t kSlotLines = 80;  // 20 groups of 4 lines: 2400 floats per step
constexpr size_t kGuard = 5;

// Ring all-reduce (sum) of `count` floats on `nranks` blocks of `blockDim` threads, LL128, with
// steps of at most `chunk` elements; "" or what went wrong.
std::string runLL128(int nranks, size_t count, size_t chunk, int blockDim) {
  TestNet net(nranks, kSlotLines);
  std::vector<int> userRanks(nranks);
  std::vector<std::vector<float>> in(nranks), out(nranks);
  for (int r = 0; r < nranks; ++r) {
    userRanks[r] = r;
    for (size_t i = 0; i < count + kGuard; ++i) in[r].push_back(contribution<float>(r, i));
    out[r].assign(count + kGuard, -1.0f);
  }
  uint32_t aborted = 0;
  const std::string err = net.launch([&] {
    const int r = simt::blockIndex();
    CudaPrimsArgs args = net.ringArgs(r, in[r].data(), out[r].data(), kProtoLL128);
    CudaPrims<float, RedSum<float>, 1, 1, kProtoLL128> prims(args, RedSum<float>{});
    RingView ring{nranks, r, userRanks.data()};
    CollWork work{};
    work.chanCount = count;
    work.chunkElems = chunk;
    ringAllReduce(prims, ring, work);
    if (prims.aborted()) simt::atomicAdd32(&aborted, 1);
  }, blockDim);
  if (!err.empty()) return err;
  if (aborted) return "a block reported an abort";
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i)
      if (out[r][i] != closedFormSum<float>(nranks, i))
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + " = " + std::to_string(out[r][i]) +
               ", expected " + std::to_string(closedFormSum<float>(nranks, i));
    for (size_t i = count; i < count + kGuard; ++i)
      if (out[r][i] != -1.0f) return "rank " + std::to_string(r) + " guard element " + std::to_string(i) + " written";
  }
  return net.checkSteps();
}

class CudaPrimsLL128Unroll : public ::testing::TestWithParam<int> {};  // data warps

// Two ranks, one step per rank's share: a share of g groups less 7 floats is a step of g groups
// whose last line is partial.
TEST_P(CudaPrimsLL128Unroll, EveryGroupCountOfAStep) {
  const int dataWarps = GetParam();
  const int blockDim = (dataWarps + 1) * simt::kWarpSize;  // plus the peer warp
  const size_t perGroup = simt::kLL128LinesPerWarp * kLL128LineDataBytes / sizeof(float);  // 120
  const size_t chunk = kSlotLines * kLL128LineDataBytes / sizeof(float);
  for (size_t g = 1; g <= kSlotLines / simt::kLL128LinesPerWarp; ++g)
    EXPECT_EQ(runLL128(2, 2 * (g * perGroup - 7), chunk, blockDim), "") << g << " groups per step";
}

// Three ranks, many steps of uneven sizes: 0, 1, odd, a partial last group, several chunks.
TEST_P(CudaPrimsLL128Unroll, AwkwardCountsOverManySteps) {
  const int blockDim = (GetParam() + 1) * simt::kWarpSize;
  for (size_t count : {size_t(0), size_t(1), size_t(31), size_t(241), size_t(1451), size_t(9001)})
    for (size_t chunk : {size_t(150), size_t(2400)})
      EXPECT_EQ(runLL128(3, count, chunk, blockDim), "") << "count " << count << ", chunk " << chunk;
}

INSTANTIATE_TEST_SUITE_P(DataWarps, CudaPrimsLL128Unroll, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "dataWarps";
                         });

}  // namespace
}  // namespace accl
