// GPU tests of the shared reduction code: the kernels of red_ops_kernels.cu (device fast paths:
// PTX conversions, explicitly rounded float math) must agree bit for bit with the host backend
// (reduceBuffers and the software conversions) for every type, op and step combination.
// Every test skips itself when no CUDA device is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "device/common/dtypes.h"
#include "device/common/reduce_buffers.h"
#include "red_ops_kernels.h"

namespace accl::gputest {
namespace {

#define ACCL_REQUIRE_GPU()                                              \
  do {                                                                  \
    if (deviceCount() == 0) GTEST_SKIP() << "no CUDA device visible"; \
  } while (0)

uint32_t floatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(GpuRedOp, ConversionsMatchHost) {
  ACCL_REQUIRE_GPU();
  std::vector<float> in;
  for (uint32_t p = 0; p < 65536; ++p) {
    float h = Half::fromBits(uint16_t(p)).toFloat(), b = Bf16::fromBits(uint16_t(p)).toFloat();
    for (float v : {h, b, std::nextafter(h, INFINITY), std::nextafter(b, -INFINITY), h * 1.00048828125f}) in.push_back(v);
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    uint32_t r = rng();
    float f;
    std::memcpy(&f, &r, 4);
    in.push_back(f);
  }
  size_t n = in.size();
  std::vector<uint16_t> half(n), bf16(n);
  std::vector<uint8_t> e4m3(n), e5m2(n);
  std::vector<float> h2f(65536), b2f(65536), e4f(256), e5f(256);
  ASSERT_EQ(deviceConvert(in.data(), n, {half.data(), bf16.data(), e4m3.data(), e5m2.data(), h2f.data(), b2f.data(),
                                          e4f.data(), e5f.data()}),
            "");
  int bad = 0;
  for (size_t i = 0; i < n && bad < 10; ++i) {
    if (half[i] != Half::fromFloat(in[i]).bits || bf16[i] != Bf16::fromFloat(in[i]).bits ||
        e4m3[i] != Fp8E4M3::fromFloat(in[i]).bits || e5m2[i] != Fp8E5M2::fromFloat(in[i]).bits) {
      ++bad;
      ADD_FAILURE() << "float 0x" << std::hex << floatBits(in[i]) << ": device half " << half[i] << " bf16 "
                    << bf16[i] << " e4m3 " << unsigned(e4m3[i]) << " e5m2 " << unsigned(e5m2[i]);
    }
  }
  for (uint32_t p = 0; p < 65536; ++p) {
    EXPECT_EQ(floatBits(h2f[p]), floatBits(Half::fromBits(uint16_t(p)).toFloat())) << std::hex << p;
    EXPECT_EQ(floatBits(b2f[p]), floatBits(Bf16::fromBits(uint16_t(p)).toFloat())) << std::hex << p;
    if (p < 256) {
      EXPECT_EQ(floatBits(e4f[p]), floatBits(Fp8E4M3::fromBits(uint8_t(p)).toFloat())) << std::hex << p;
      EXPECT_EQ(floatBits(e5f[p]), floatBits(Fp8E5M2::fromBits(uint8_t(p)).toFloat())) << std::hex << p;
    }
  }
}

// Random element bytes: arbitrary patterns for the narrow formats and integers, and for float and
// double mostly moderate values (so sums and products round rather than overflow) plus some NaNs.
std::vector<uint8_t> randomElements(ncclDataType_t type, size_t count, std::mt19937& rng) {
  size_t size = dtypeSize(type);
  std::vector<uint8_t> bytes(count * size);
  for (auto& b : bytes) b = uint8_t(rng());
  std::uniform_real_distribution<double> dist(-1000.0, 1000.0);
  for (size_t i = 0; i < count; ++i) {
    double v = (i % 17 == 0) ? NAN : dist(rng);
    if (type == ncclFloat32) {
      float f = float(v);
      std::memcpy(&bytes[i * 4], &f, 4);
    } else if (type == ncclFloat64) {
      std::memcpy(&bytes[i * 8], &v, 8);
    }
  }
  return bytes;
}

// Same bytes, except that two NaNs of float/double compare equal whatever their payloads (x86
// propagates an input payload, the GPU produces the canonical NaN).
bool sameElement(ncclDataType_t type, const uint8_t* x, const uint8_t* y) {
  if (type == ncclFloat32) {
    float a, b;
    std::memcpy(&a, x, 4);
    std::memcpy(&b, y, 4);
    if (std::isnan(a) && std::isnan(b)) return true;
  } else if (type == ncclFloat64) {
    double a, b;
    std::memcpy(&a, x, 8);
    std::memcpy(&b, y, 8);
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return std::memcmp(x, y, dtypeSize(type)) == 0;
}

TEST(GpuRedOp, EveryTypeOpAndStepMatchesHost) {
  ACCL_REQUIRE_GPU();
  constexpr size_t kCount = 4099;
  std::mt19937 rng(12);
  for (int t = 0; t < int(ncclNumTypes); ++t) {
    ncclDataType_t type = ncclDataType_t(t);
    size_t size = dtypeSize(type);
    auto a = randomElements(type, kCount, rng), b = randomElements(type, kCount, rng);
    auto scalar = randomElements(type, 1, rng);
    std::vector<DevRedOp> ops;
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      DevRedOp d;
      ASSERT_EQ(makeDevRedOp(op, type, 5, &d), ncclSuccess);
      ops.push_back(d);
    }
    DevRedOp imm, ptr;
    ASSERT_EQ(makePreMulSum(type, scalar.data(), false, &imm), ncclSuccess);
    ASSERT_EQ(makePreMulSum(type, scalar.data(), true, &ptr), ncclSuccess);
    ops.push_back(imm);
    ops.push_back(ptr);
    for (const DevRedOp& op : ops) {
      for (unsigned steps : {0u, unsigned(kPreOpB), unsigned(kPreOpB | kPostOp), unsigned(kPostOp)}) {
        std::vector<uint8_t> host(kCount * size), dev(kCount * size);
        ASSERT_EQ(reduceBuffers(host.data(), a.data(), b.data(), kCount, type, op, steps), ncclSuccess);
        ASSERT_EQ(deviceReduce(type, op, steps, a.data(), b.data(), dev.data(), kCount), "");
        int bad = 0;
        for (size_t i = 0; i < kCount && bad < 5; ++i) {
          if (!sameElement(type, &host[i * size], &dev[i * size])) {
            ++bad;
            ADD_FAILURE() << dtypeName(type) << " " << devRedOpKindName(op.kind) << (op.scalarIsPtr ? " (ptr)" : "")
                          << " steps " << steps << " element " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace accl::gputest
