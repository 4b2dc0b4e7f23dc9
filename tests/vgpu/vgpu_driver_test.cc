// The stand-in driver library (build/vgpu/libcuda.so.1, vgpu/driver/libcuda.c) as a tool opens
// it, by name with dlopen/dlsym: each device's UUID, count and PCI bus id agree with what the
// runtime says of the same device, both UUID names are exported, and an error has its name.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

struct Uuid {
  char bytes[16];
};

class VgpuDriverLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = dlopen(ACCL_VGPU_DRIVER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (lib_) dlclose(lib_);
  }
  template <class Fn>
  Fn fn(const char* name) {
    void* f = dlsym(lib_, name);
    EXPECT_NE(f, nullptr) << name << " is not exported";
    return reinterpret_cast<Fn>(f);
  }
  void* lib_ = nullptr;
};

TEST_F(VgpuDriverLibrary, DevicesAgreeWithTheRuntime) {
  int runtimeCount = 0;
  ASSERT_EQ(cudaGetDeviceCount(&runtimeCount), cudaSuccess);
  ASSERT_GT(runtimeCount, 0);
  auto init = fn<int (*)(unsigned)>("cuInit");
  auto count = fn<int (*)(int*)>("cuDeviceGetCount");
  auto get = fn<int (*)(int*, int)>("cuDeviceGet");
  auto uuid = fn<int (*)(Uuid*, int)>("cuDeviceGetUuid");
  auto uuidV2 = fn<int (*)(Uuid*, int)>("cuDeviceGetUuid_v2");
  auto busId = fn<int (*)(char*, int, int)>("cuDeviceGetPCIBusId");
  ASSERT_TRUE(init && count && get && uuid && uuidV2 && busId);
  ASSERT_EQ(init(0), 0);
  int n = -1;
  ASSERT_EQ(count(&n), 0);
  EXPECT_EQ(n, runtimeCount);
  for (int ordinal = 0; ordinal < runtimeCount; ++ordinal) {
    SCOPED_TRACE("device " + std::to_string(ordinal));
    int dev = -1;
    ASSERT_EQ(get(&dev, ordinal), 0);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, ordinal), cudaSuccess);
    Uuid a{}, b{};
    ASSERT_EQ(uuid(&a, dev), 0);
    ASSERT_EQ(uuidV2(&b, dev), 0);
    EXPECT_EQ(std::memcmp(a.bytes, prop.uuid.bytes, 16), 0);
    EXPECT_EQ(std::memcmp(b.bytes, prop.uuid.bytes, 16), 0);
    char fromDriver[32] = {}, fromRuntime[32] = {};
    ASSERT_EQ(busId(fromDriver, sizeof fromDriver, dev), 0);
    ASSERT_EQ(cudaDeviceGetPCIBusId(fromRuntime, sizeof fromRuntime, ordinal), cudaSuccess);
    EXPECT_STREQ(fromDriver, fromRuntime);
  }
  // Devices differ from each other (a tool keys its output files by UUID).
  if (runtimeCount > 1) {
    Uuid first{}, second{};
    ASSERT_EQ(uuid(&first, 0), 0);
    ASSERT_EQ(uuid(&second, 1), 0);
    EXPECT_NE(std::memcmp(first.bytes, second.bytes, 16), 0);
  }
}

TEST_F(VgpuDriverLibrary, ErrorsHaveNames) {
  auto name = fn<int (*)(int, const char**)>("cuGetErrorName");
  auto text = fn<int (*)(int, const char**)>("cuGetErrorString");
  ASSERT_TRUE(name && text);
  const char* s = nullptr;
  ASSERT_EQ(name(1, &s), 0);  // CUDA_ERROR_INVALID_VALUE
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(s, "CUDA_ERROR_INVALID_VALUE");
  s = nullptr;
  ASSERT_EQ(text(1, &s), 0);
  ASSERT_NE(s, nullptr);
  EXPECT_GT(std::strlen(s), 0u);
}

}  // namespace
