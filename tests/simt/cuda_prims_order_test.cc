// The CUDA Prims reduce in the host backend's order, so both give bit-identical results: ring
// all-reduce on the CPU SIMT harness with random inputs of every element width (fp8, half, bf16,
// float, double, integers) and ops with and without pre/postOp, compared bit for bit with the
// ring's reduction order evaluated directly (ring_order.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algos/ring_all_reduce.h"
#include "device/common/dtypes.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"
#include "ring_order.h"

namespace accl {
namespace {

using primstest::protoName;
using primstest::randomElem;
using primstest::ringOrderResult;
using primstest::TestNet;

template <class T, class Op>
std::string checkRingOrder(int nranks, ProtoId proto, size_t count, const Op& op) {
  TestNet net(nranks);
  std::vector<std::vector<T>> in(nranks), out(nranks, std::vector<T>(count));
  uint64_t state = 12345 + uint64_t(nranks) * 77 + uint64_t(proto);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i) in[r].push_back(randomElem<T>(state));
  std::vector<int> userRanks(nranks);
  for (int r = 0; r < nranks; ++r) userRanks[r] = r;
  const size_t chunk = primsChunkCapacity(*net.sendEnd(0, 0), proto, sizeof(T));
  std::string err = net.launch([&] {
    const int r = simt::blockIndex();
    CudaPrimsArgs args = net.ringArgs(r, in[r].data(), out[r].data(), proto);
    CudaPrims<T, Op> prims(args, op);
    RingView ring{nranks, r, userRanks.data()};
    CollWork work{};
    work.chanCount = count;
    work.chunkElems = chunk;
    ringAllReduce(prims, ring, work);
  });
  if (!err.empty()) return err;
  const std::vector<T> want = ringOrderResult(in, count, chunk, op);
  for (int r = 0; r < nranks; ++r)
    for (size_t i = 0; i < count; ++i)
      if (memcmp(&out[r][i], &want[i], sizeof(T)) != 0)
        return std::string(DtypeTraits<T>::kName) + " " + protoName(proto) + ": rank " + std::to_string(r) +
               " element " + std::to_string(i) + " differs from the ring-order value";
  return "";
}

class CudaPrimsOrder : public ::testing::TestWithParam<ProtoId> {};

TEST_P(CudaPrimsOrder, EveryWidthAndOpMatchesTheHostOrderBitForBit) {
  const ProtoId proto = GetParam();
  const size_t count = 1031;
  for (int n : {3, 4}) {
    EXPECT_EQ((checkRingOrder<float>(n, proto, count, RedSum<float>{})), "");
    EXPECT_EQ((checkRingOrder<float>(n, proto, count, RedPreMulSum<float>{0.3f})), "");
    EXPECT_EQ((checkRingOrder<float>(n, proto, count, RedMax<float>{})), "");
    EXPECT_EQ((checkRingOrder<double>(n, proto, count, RedProd<double>{})), "");
    EXPECT_EQ((checkRingOrder<Half>(n, proto, count, RedSum<Half>{})), "");
    EXPECT_EQ((checkRingOrder<Bf16>(n, proto, count, RedSum<Bf16>{})), "");
    EXPECT_EQ((checkRingOrder<Bf16>(n, proto, count, RedMin<Bf16>{})), "");
    EXPECT_EQ((checkRingOrder<Fp8E4M3>(n, proto, count, RedSum<Fp8E4M3>{})), "");
    EXPECT_EQ((checkRingOrder<Fp8E5M2>(n, proto, count, RedPreMulSum<Fp8E5M2>{Fp8E5M2::fromFloat(0.5f)})), "");
    EXPECT_EQ((checkRingOrder<int8_t>(n, proto, count, RedProd<int8_t>{})), "");
    EXPECT_EQ((checkRingOrder<uint64_t>(n, proto, count, RedSum<uint64_t>{})), "");
    EXPECT_EQ((checkRingOrder<int32_t>(n, proto, count, RedSumPostDiv<int32_t>{uint64_t(n)})), "");
  }
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaPrimsOrder, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });

}  // namespace
}  // namespace accl
