// The virtual GPU's memory (vgpu/memory.cc, vgpu/cumem.cc) against the CUDA runtime's semantics,
// through the public API only: cudaMalloc sizes and budget, pointer attributes of every kind, bad
// frees, out-of-range copies, host registration, legacy IPC with a forked child, and cuMem (reached
// through cudaGetDriverEntryPointByVersion) shared with a forked child as a POSIX fd. Every wait on
// another process has a deadline.
//
// A forked child calls only what needs no stream — allocation, IPC, cuMem, pointer queries — and
// touches device memory directly (it is host memory on the virtual GPU): no stream survives fork
// (CUDA itself refuses every call in a child of an initialised parent).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace {

constexpr int kChildDeadlineSeconds = 20;
constexpr size_t kGran = size_t{2} << 20;

// The last error must be `e`, and reading it clears it.
void expectLastError(cudaError_t e) {
  EXPECT_EQ(cudaGetLastError(), e);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Waits for `pid` until the deadline, then kills it. The child's exit code, or -1 on a signal or
// a missed deadline.
int waitChild(pid_t pid, int seconds = kChildDeadlineSeconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "child " << pid << " missed its " << seconds << " s deadline";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Runs `body` in a forked child, which exits with what it returns (0: success; the step number
// that failed otherwise). A backstop alarm ends a child that would hang.
template <class F>
pid_t forkChild(F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(kChildDeadlineSeconds + 5);
    _exit(body());
  }
  return pid;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed) & 0xff);
  return v;
}

template <class F>
F driverFn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  EXPECT_EQ(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status), cudaSuccess) << name;
  EXPECT_EQ(status, cudaDriverEntryPointSuccess) << name;
  EXPECT_NE(fn, nullptr) << name;
  return reinterpret_cast<F>(fn);
}

// The driver entry points the cuMem tests use.
struct Driver {
  decltype(&cuGetErrorString) getErrorString = driverFn<decltype(&cuGetErrorString)>("cuGetErrorString");
  decltype(&cuGetErrorName) getErrorName = driverFn<decltype(&cuGetErrorName)>("cuGetErrorName");
  decltype(&cuInit) init = driverFn<decltype(&cuInit)>("cuInit");
  decltype(&cuDriverGetVersion) driverGetVersion = driverFn<decltype(&cuDriverGetVersion)>("cuDriverGetVersion");
  decltype(&cuDeviceGet) deviceGet = driverFn<decltype(&cuDeviceGet)>("cuDeviceGet");
  decltype(&cuDeviceGetCount) deviceGetCount = driverFn<decltype(&cuDeviceGetCount)>("cuDeviceGetCount");
  decltype(&cuDeviceGetAttribute) deviceGetAttribute = driverFn<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
  decltype(&cuDeviceGetUuid) deviceGetUuid = driverFn<decltype(&cuDeviceGetUuid)>("cuDeviceGetUuid");
  decltype(&cuDeviceGetPCIBusId) deviceGetPCIBusId = driverFn<decltype(&cuDeviceGetPCIBusId)>("cuDeviceGetPCIBusId");
  decltype(&cuMemGetAllocationGranularity) granularity =
      driverFn<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  decltype(&cuMemCreate) create = driverFn<decltype(&cuMemCreate)>("cuMemCreate");
  decltype(&cuMemRelease) release = driverFn<decltype(&cuMemRelease)>("cuMemRelease");
  decltype(&cuMemAddressReserve) reserve = driverFn<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  decltype(&cuMemAddressFree) addressFree = driverFn<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  decltype(&cuMemMap) map = driverFn<decltype(&cuMemMap)>("cuMemMap");
  decltype(&cuMemUnmap) unmap = driverFn<decltype(&cuMemUnmap)>("cuMemUnmap");
  decltype(&cuMemSetAccess) setAccess = driverFn<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  decltype(&cuMemExportToShareableHandle) exportHandle =
      driverFn<decltype(&cuMemExportToShareableHandle)>("cuMemExportToShareableHandle");
  decltype(&cuMemImportFromShareableHandle) importHandle =
      driverFn<decltype(&cuMemImportFromShareableHandle)>("cuMemImportFromShareableHandle");
  decltype(&cuMemGetAddressRange) getAddressRange = driverFn<decltype(&cuMemGetAddressRange)>("cuMemGetAddressRange");
  decltype(&cuMemRetainAllocationHandle) retain =
      driverFn<decltype(&cuMemRetainAllocationHandle)>("cuMemRetainAllocationHandle");
  decltype(&cuPointerGetAttribute) pointerGetAttribute =
      driverFn<decltype(&cuPointerGetAttribute)>("cuPointerGetAttribute");
};

const Driver& drv() {
  static const Driver d;
  return d;
}

CUmemAllocationProp deviceProp(int dev, unsigned handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  p.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handleTypes);
  return p;
}

CUmemAccessDesc access(int dev, CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
  CUmemAccessDesc a{};
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = dev;
  a.flags = flags;
  return a;
}

// Reserves, maps and grants read-write access to `handle` (bytes long) on `dev`; 0 on failure.
CUdeviceptr mapHandle(CUmemGenericAllocationHandle handle, size_t bytes, int dev) {
  CUdeviceptr va = 0;
  if (drv().reserve(&va, bytes, 0, 0, 0) != CUDA_SUCCESS) return 0;
  if (drv().map(va, bytes, 0, handle, 0) != CUDA_SUCCESS) return 0;
  const CUmemAccessDesc a = access(dev);
  if (drv().setAccess(va, bytes, &a, 1) != CUDA_SUCCESS) return 0;
  return va;
}

void* ptrOf(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// Asks the driver whether [p, p + bytes) lies in one allocation (no stream involved).
bool insideOneAllocation(const void* p, size_t bytes) {
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUdeviceptr at = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
  return drv().getAddressRange(&base, &size, at) == CUDA_SUCCESS && at + bytes <= base + size;
}

// Sends / receives one fd over a unix socket (SCM_RIGHTS).
bool sendFd(int sock, int fd) {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &msg, 0) == 1;
}

int recvFd(int sock) {
  timeval tv{kChildDeadlineSeconds, 0};  // never wait for a parent that failed before sending
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  if (recvmsg(sock, &msg, 0) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

class VgpuMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaGetLastError();
  }
};

// ---- cudaMalloc / cudaFree ----------------------------------------------------------------------

TEST_F(VgpuMemory, MallocOfZeroBytesIsANullSuccess) {
  void* p = reinterpret_cast<void*>(0x1234);
  EXPECT_EQ(cudaMalloc(&p, 0), cudaSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(VgpuMemory, MallocSizesAreAlignedUsableAndDistinct) {
  std::vector<void*> ptrs;
  for (size_t size : {size_t{1}, size_t{3}, size_t{255}, size_t{4097}, size_t{12345}, size_t{(2u << 20) + 7}}) {
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, size), cudaSuccess) << size;
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << size;
    const auto data = pattern(size, unsigned(size));
    ASSERT_EQ(cudaMemcpy(p, data.data(), size, cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<unsigned char> back(size);
    ASSERT_EQ(cudaMemcpy(back.data(), p, size, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(back, data) << size;
    ptrs.push_back(p);
  }
  EXPECT_EQ(std::set<void*>(ptrs.begin(), ptrs.end()).size(), ptrs.size());
  for (void* p : ptrs) EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(VgpuMemory, OneGibAllocationIsSparseAndCharged) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_GT(total, size_t{1} << 30);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, size_t{1} << 30), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2u << 20), 0u);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_LE(free1 + (size_t{1} << 30), free0);
  // Touch both ends only: the rest never becomes resident.
  ASSERT_EQ(cudaMemset(p, 0x5a, 4096), cudaSuccess);
  ASSERT_EQ(cudaMemset(static_cast<char*>(p) + (size_t{1} << 30) - 4096, 0xa5, 4096), cudaSuccess);
  unsigned char last = 0;
  ASSERT_EQ(cudaMemcpy(&last, static_cast<char*>(p) + (size_t{1} << 30) - 1, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(last, 0xa5);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  size_t free2 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free2, &total), cudaSuccess);
  EXPECT_EQ(free2, free0);
}

TEST_F(VgpuMemory, FreedMemoryComesBackZeroed) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 8192), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, 0xff, 8192), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  void* q = nullptr;
  ASSERT_EQ(cudaMalloc(&q, 8192), cudaSuccess);
  std::vector<unsigned char> back(8192, 1);
  ASSERT_EQ(cudaMemcpy(back.data(), q, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, std::vector<unsigned char>(8192, 0));  // holes were punched: not a contract, but what we do
  EXPECT_EQ(cudaFree(q), cudaSuccess);
}

TEST_F(VgpuMemory, MallocBeyondTheDeviceIsOutOfMemory) {
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(cudaMalloc(&p, total + 1), cudaErrorMemoryAllocation);
  expectLastError(cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc(&p, SIZE_MAX), cudaErrorMemoryAllocation);
  expectLastError(cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemGetInfo(nullptr, &total), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
}

TEST_F(VgpuMemory, BadFreesAreInvalidValues) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 1024), cudaSuccess);
  EXPECT_EQ(cudaFree(static_cast<char*>(p) + 16), cudaErrorInvalidValue);  // not the base
  expectLastError(cudaErrorInvalidValue);
  int onStack = 0;
  EXPECT_EQ(cudaFree(&onStack), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  void* heap = std::malloc(64);
  EXPECT_EQ(cudaFree(heap), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(heap), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  std::free(heap);
  EXPECT_EQ(cudaFreeHost(p), cudaErrorInvalidValue);  // device memory is not pinned host memory
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);  // twice
  expectLastError(cudaErrorInvalidValue);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 100), cudaSuccess);
  EXPECT_EQ(cudaFree(pinned), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(nullptr), cudaSuccess);
}

TEST_F(VgpuMemory, ConcurrentMallocsNeverOverlap) {
  constexpr int kThreads = 8, kPer = 50;
  std::vector<std::vector<std::pair<uintptr_t, size_t>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &got] {
      for (int i = 0; i < kPer; ++i) {
        const size_t size = 1 + size_t(t * 977 + i * 131) % 20000;
        void* p = nullptr;
        if (cudaMalloc(&p, size) != cudaSuccess) return;
        got[t].push_back({reinterpret_cast<uintptr_t>(p), size});
        if (i % 3 == 0) {
          cudaFree(p);
          got[t].pop_back();
        }
      }
    });
  for (auto& th : threads) th.join();
  std::vector<std::pair<uintptr_t, size_t>> all;
  for (auto& v : got) all.insert(all.end(), v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t(kThreads) * (kPer - (kPer + 2) / 3));
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LE(all[i - 1].first + all[i - 1].second, all[i].first);
  for (auto& [p, size] : all) EXPECT_EQ(cudaFree(reinterpret_cast<void*>(p)), cudaSuccess);
}

TEST_F(VgpuMemory, UnimplementedAllocatorsAreRefused) {
  void* p = nullptr;
  EXPECT_EQ(cudaMallocManaged(&p, 64, cudaMemAttachGlobal), cudaErrorNotSupported);
  expectLastError(cudaErrorNotSupported);
  EXPECT_EQ(cudaMallocAsync(&p, 64, nullptr), cudaErrorNotSupported);
  expectLastError(cudaErrorNotSupported);
  EXPECT_EQ(cudaFreeAsync(p, nullptr), cudaErrorNotSupported);
  expectLastError(cudaErrorNotSupported);
}

// ---- pointer attributes -------------------------------------------------------------------------

TEST_F(VgpuMemory, PointerAttributesOfEveryKind) {
  cudaPointerAttributes a;
  void* dev0 = nullptr;
  ASSERT_EQ(cudaMalloc(&dev0, 4096), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(dev0) + 100), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.devicePointer, static_cast<char*>(dev0) + 100);
  EXPECT_EQ(a.hostPointer, nullptr);

  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* dev1 = nullptr;
  ASSERT_EQ(cudaMalloc(&dev1, 64), cudaSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 1000, cudaHostAllocMapped), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, dev1), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 1);
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(pinned) + 999), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  EXPECT_EQ(a.device, 1);  // the device current when it was allocated
  EXPECT_EQ(a.devicePointer, static_cast<char*>(pinned) + 999);
  EXPECT_EQ(a.hostPointer, static_cast<char*>(pinned) + 999);

  std::vector<char> user(10000);
  ASSERT_EQ(cudaHostRegister(user.data(), user.size(), cudaHostRegisterDefault), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, user.data() + 5), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.devicePointer, user.data() + 5);
  EXPECT_EQ(a.hostPointer, user.data() + 5);
  ASSERT_EQ(cudaHostUnregister(user.data()), cudaSuccess);

  // Memory CUDA does not know: success, "unregistered" (CUDA 11 onwards).
  void* heap = std::malloc(32);
  ASSERT_EQ(cudaPointerGetAttributes(&a, heap), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(a.device, -2);
  EXPECT_EQ(a.devicePointer, nullptr);
  EXPECT_EQ(a.hostPointer, heap);
  std::free(heap);
  int onStack = 0;
  ASSERT_EQ(cudaPointerGetAttributes(&a, &onStack), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  // One past the end of an allocation is not in it.
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(dev1) + 64), cudaSuccess);
  EXPECT_NE(a.type, cudaMemoryTypeDevice);

  EXPECT_EQ(cudaPointerGetAttributes(nullptr, dev0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(dev0), cudaSuccess);
  EXPECT_EQ(cudaFree(dev1), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, dev0), cudaSuccess);  // freed: unknown again
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
}

// ---- copies and sets ----------------------------------------------------------------------------

TEST_F(VgpuMemory, CopiesOutOfRangeAreInvalidValues) {
  void* d = nullptr;
  void* e = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 100), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&e, 100), cudaSuccess);
  std::vector<char> host(4096, 7);
  char* dc = static_cast<char*>(d);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 100, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 101, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(dc + 50, host.data(), 51, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), dc + 99, 2, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  // A host pointer where the kind says device.
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 100, 10, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 100, 10, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 10, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(e, d, 100, cudaMemcpyDeviceToDevice), cudaSuccess);
  // Default infers: an overrun of a known range is refused, unknown memory is host memory.
  EXPECT_EQ(cudaMemcpy(host.data(), dc + 10, 91, cudaMemcpyDefault), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 2000, 100, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), d, 100, cudaMemcpyDefault), cudaSuccess);
  // Two allocations side by side are still two: no copy runs from one into the next.
  if (static_cast<char*>(e) == dc + 4096 || dc == static_cast<char*>(e) + 4096) {
    char* first = std::min(dc, static_cast<char*>(e));
    EXPECT_EQ(cudaMemcpy(first, host.data(), 4097, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    expectLastError(cudaErrorInvalidValue);
  }
  // Host to host needs no registration; zero bytes need nothing.
  EXPECT_EQ(cudaMemcpy(host.data(), host.data() + 1000, 10, cudaMemcpyHostToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), host.data(), 0, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 10, static_cast<cudaMemcpyKind>(17)), cudaErrorInvalidMemcpyDirection);
  expectLastError(cudaErrorInvalidMemcpyDirection);
  // Sets: device-accessible destinations only, and only within them.
  EXPECT_EQ(cudaMemset(d, 0, 100), cudaSuccess);
  EXPECT_EQ(cudaMemset(d, 0, 101), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(host.data(), 0, 10), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(e), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), d, 1, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);  // freed
  expectLastError(cudaErrorInvalidValue);
}

TEST_F(VgpuMemory, PinnedAndRegisteredMemoryIsDeviceAccessible) {
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 256), cudaSuccess);
  std::vector<char> user(512, 3);
  ASSERT_EQ(cudaHostRegister(user.data(), user.size(), cudaHostRegisterPortable | cudaHostRegisterMapped), cudaSuccess);
  const auto data = pattern(256, 9);
  EXPECT_EQ(cudaMemcpy(pinned, data.data(), 256, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(user.data(), pinned, 256, cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(std::memcmp(user.data(), data.data(), 256), 0);
  EXPECT_EQ(cudaMemset(user.data() + 256, 1, 256), cudaSuccess);
  EXPECT_EQ(cudaMemset(user.data() + 256, 1, 257), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostUnregister(user.data()), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// ---- host memory --------------------------------------------------------------------------------

TEST_F(VgpuMemory, HostRegisterTwiceAndUnregisterErrors) {
  std::vector<char> buf(1 << 16);
  ASSERT_EQ(cudaHostRegister(buf.data(), buf.size(), 0), cudaSuccess);
  EXPECT_EQ(cudaHostRegister(buf.data(), buf.size(), 0), cudaErrorHostMemoryAlreadyRegistered);
  expectLastError(cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_EQ(cudaHostRegister(buf.data() + 100, 100, 0), cudaErrorHostMemoryAlreadyRegistered);  // overlaps
  expectLastError(cudaErrorHostMemoryAlreadyRegistered);
  void* dp = nullptr;
  EXPECT_EQ(cudaHostGetDevicePointer(&dp, buf.data() + 10, 0), cudaSuccess);
  EXPECT_EQ(dp, buf.data() + 10);
  unsigned flags = 0;
  EXPECT_EQ(cudaHostGetFlags(&flags, buf.data()), cudaErrorInvalidValue);  // only cudaHostAlloc memory
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostUnregister(buf.data() + 1), cudaErrorHostMemoryNotRegistered);  // not the base
  expectLastError(cudaErrorHostMemoryNotRegistered);
  EXPECT_EQ(cudaHostUnregister(buf.data()), cudaSuccess);
  EXPECT_EQ(cudaHostUnregister(buf.data()), cudaErrorHostMemoryNotRegistered);
  expectLastError(cudaErrorHostMemoryNotRegistered);
  EXPECT_EQ(cudaHostUnregister(nullptr), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostGetDevicePointer(&dp, buf.data(), 0), cudaErrorInvalidValue);  // unregistered now
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostRegister(nullptr, 10, 0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostRegister(buf.data(), 0, 0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostRegister(buf.data(), buf.size(), 0x100), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  // Memory that is not mapped cannot be registered.
  void* hole = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, 1 << 16);
  EXPECT_EQ(cudaHostRegister(hole, 1 << 16, 0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  // Device memory is not host memory to register.
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  EXPECT_NE(cudaHostRegister(d, 4096, 0), cudaSuccess);
  cudaGetLastError();
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(VgpuMemory, HostAllocFlagsAndDevicePointers) {
  void* p = nullptr;
  ASSERT_EQ(cudaHostAlloc(&p, 5000, cudaHostAllocMapped | cudaHostAllocPortable), cudaSuccess);
  unsigned flags = 0;
  ASSERT_EQ(cudaHostGetFlags(&flags, static_cast<char*>(p) + 4999), cudaSuccess);
  EXPECT_EQ(flags, unsigned(cudaHostAllocMapped | cudaHostAllocPortable));
  void* dp = nullptr;
  EXPECT_EQ(cudaHostGetDevicePointer(&dp, p, 0), cudaSuccess);
  EXPECT_EQ(dp, p);
  EXPECT_EQ(cudaHostGetDevicePointer(&dp, p, 1), cudaErrorInvalidValue);  // flags must be 0
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostGetDevicePointer(nullptr, p, 0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  EXPECT_EQ(cudaHostGetDevicePointer(&dp, d, 0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(static_cast<char*>(p) + 1), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(p), cudaSuccess);
  void* q = nullptr;
  EXPECT_EQ(cudaHostAlloc(&q, 64, 0x40), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostAlloc(nullptr, 64, 0), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  q = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(cudaMallocHost(&q, 0), cudaSuccess);
  EXPECT_EQ(q, nullptr);
}

// ---- legacy IPC ---------------------------------------------------------------------------------

TEST_F(VgpuMemory, IpcHandleOpenedByAForkedChild) {
  constexpr size_t kBytes = (1 << 20) + 123;
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, 0, kBytes), cudaSuccess);
  cudaIpcMemHandle_t h, hInner;
  ASSERT_EQ(cudaIpcGetMemHandle(&h, d), cudaSuccess);
  ASSERT_EQ(cudaIpcGetMemHandle(&hInner, static_cast<char*>(d) + 1000), cudaSuccess);
  EXPECT_EQ(std::memcmp(&h, &hInner, sizeof h), 0);  // any pointer inside names the whole allocation
  const auto data = pattern(kBytes, 42);

  const pid_t pid = forkChild([&]() -> int {
    void* p = nullptr;
    if (cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) return 1;
    void* again = nullptr;
    if (cudaIpcOpenMemHandle(&again, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess || again != p) return 2;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess || a.type != cudaMemoryTypeDevice || a.device != 0) return 3;
    if (!insideOneAllocation(p, kBytes) || insideOneAllocation(p, kBytes + 1)) return 4;  // exactly the allocation
    std::memcpy(p, data.data(), kBytes - 1);
    if (cudaIpcCloseMemHandle(p) != cudaSuccess) return 6;  // one reference left: still mapped
    static_cast<unsigned char*>(p)[kBytes - 1] = data[kBytes - 1];
    if (cudaIpcCloseMemHandle(p) != cudaSuccess) return 8;
    if (cudaIpcCloseMemHandle(p) != cudaErrorInvalidValue) return 9;
    // The parent's allocation is not the child's to free (CUDA does not carry it across fork).
    if (cudaFree(d) != cudaErrorInvalidValue) return 10;
    void* mine = nullptr;  // and the child's own allocations do not land in the parent's memory
    if (cudaMalloc(&mine, kBytes) != cudaSuccess) return 11;
    std::memset(mine, 0xee, kBytes);
    return 0;
  });
  ASSERT_GT(pid, 0);
  EXPECT_EQ(waitChild(pid), 0);
  std::vector<unsigned char> back(kBytes);
  ASSERT_EQ(cudaMemcpy(back.data(), d, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, data);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(VgpuMemory, IpcHandleErrors) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  cudaIpcMemHandle_t h;
  ASSERT_EQ(cudaIpcGetMemHandle(&h, d), cudaSuccess);
  void* p = nullptr;
  // CUDA refuses to open a handle in the process that exported it ("invalid device context").
  EXPECT_EQ(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), cudaErrorDeviceUninitialized);
  expectLastError(cudaErrorDeviceUninitialized);
  cudaIpcMemHandle_t garbage;
  std::memset(&garbage, 0x3c, sizeof garbage);
  EXPECT_EQ(cudaIpcOpenMemHandle(&p, garbage, cudaIpcMemLazyEnablePeerAccess), cudaErrorInvalidResourceHandle);
  expectLastError(cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaIpcOpenMemHandle(&p, h, 0x2), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaIpcOpenMemHandle(nullptr, h, cudaIpcMemLazyEnablePeerAccess), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  std::vector<char> host(64);
  EXPECT_EQ(cudaIpcGetMemHandle(&h, host.data()), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaIpcGetMemHandle(nullptr, d), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  EXPECT_EQ(cudaIpcCloseMemHandle(d), cudaErrorInvalidValue);  // not an opened handle
  expectLastError(cudaErrorInvalidValue);
  // Freed and allocated again at the same place: a new handle.
  cudaIpcMemHandle_t before, after;
  ASSERT_EQ(cudaIpcGetMemHandle(&before, d), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  void* again = nullptr;
  ASSERT_EQ(cudaMalloc(&again, 4096), cudaSuccess);
  ASSERT_EQ(cudaIpcGetMemHandle(&after, again), cudaSuccess);
  EXPECT_NE(std::memcmp(&before, &after, sizeof before), 0);
  // A handle whose exporter has freed nothing but exited: the child's own handle, opened here.
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t pid = forkChild([&]() -> int {
    void* c = nullptr;
    cudaIpcMemHandle_t ch;
    if (cudaMalloc(&c, 4096) != cudaSuccess || cudaIpcGetMemHandle(&ch, c) != cudaSuccess) return 1;
    return write(pipefd[1], &ch, sizeof ch) == sizeof ch ? 0 : 2;
  });
  ASSERT_GT(pid, 0);
  EXPECT_EQ(waitChild(pid), 0);
  cudaIpcMemHandle_t dead;
  ASSERT_EQ(read(pipefd[0], &dead, sizeof dead), ssize_t(sizeof dead));
  close(pipefd[0]);
  close(pipefd[1]);
  EXPECT_EQ(cudaIpcOpenMemHandle(&p, dead, cudaIpcMemLazyEnablePeerAccess), cudaErrorInvalidResourceHandle);
  expectLastError(cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaFree(again), cudaSuccess);
}

// ---- the driver API and cuMem -------------------------------------------------------------------

TEST_F(VgpuMemory, DriverBasics) {
  const Driver& d = drv();
  EXPECT_EQ(d.init(0), CUDA_SUCCESS);
  EXPECT_EQ(d.init(1), CUDA_ERROR_INVALID_VALUE);
  int v = 0;
  EXPECT_EQ(d.driverGetVersion(&v), CUDA_SUCCESS);
  EXPECT_EQ(v, 13000);
  int n = 0;
  ASSERT_EQ(d.deviceGetCount(&n), CUDA_SUCCESS);
  ASSERT_GE(n, 1);
  CUdevice dev = -1;
  EXPECT_EQ(d.deviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(d.deviceGet(&dev, n), CUDA_ERROR_INVALID_DEVICE);
  const std::pair<CUdevice_attribute, int> vmm[] = {
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0},
      {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1}};
  for (auto [attr, want] : vmm) {
    int got = -1;
    EXPECT_EQ(d.deviceGetAttribute(&got, attr, 0), CUDA_SUCCESS) << attr;
    EXPECT_EQ(got, want) << attr;
  }
  int got = 0;
  EXPECT_EQ(d.deviceGetAttribute(&got, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0), CUDA_SUCCESS);
  EXPECT_EQ(got, 1);
  EXPECT_EQ(d.deviceGetAttribute(&got, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, n),
            CUDA_ERROR_INVALID_DEVICE);
  CUuuid u0{}, u1{};
  EXPECT_EQ(d.deviceGetUuid(&u0, 0), CUDA_SUCCESS);
  if (n > 1) {
    EXPECT_EQ(d.deviceGetUuid(&u1, 1), CUDA_SUCCESS);
    EXPECT_NE(std::memcmp(u0.bytes, u1.bytes, 16), 0);
  }
  char bus[32] = {};
  EXPECT_EQ(d.deviceGetPCIBusId(bus, sizeof bus, 0), CUDA_SUCCESS);
  unsigned dom = 9, b = 0, s = 9, f = 9;
  EXPECT_EQ(std::sscanf(bus, "%4x:%2x:%2x.%1x", &dom, &b, &s, &f), 4) << bus;
  EXPECT_EQ(std::strlen(bus), 12u) << bus;
  const char* str = nullptr;
  EXPECT_EQ(d.getErrorString(CUDA_ERROR_INVALID_VALUE, &str), CUDA_SUCCESS);
  EXPECT_STREQ(str, "invalid argument");
  EXPECT_EQ(d.getErrorName(CUDA_ERROR_OUT_OF_MEMORY, &str), CUDA_SUCCESS);
  EXPECT_STREQ(str, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(d.getErrorString(static_cast<CUresult>(123456), &str), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(str, nullptr);
  size_t g = 0;
  const CUmemAllocationProp prop = deviceProp(0);
  EXPECT_EQ(d.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  EXPECT_EQ(g, kGran);
  EXPECT_EQ(d.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
  EXPECT_EQ(g, kGran);
}

TEST_F(VgpuMemory, CuMemMappingIsDeviceMemory) {
  const Driver& d = drv();
  const CUmemAllocationProp prop = deviceProp(1);
  CUmemGenericAllocationHandle h;
  ASSERT_EQ(d.create(&h, 2 * kGran, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  ASSERT_EQ(d.reserve(&va, 4 * kGran, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % kGran, 0u);
  ASSERT_EQ(d.map(va + kGran, 2 * kGran, 0, h, 0), CUDA_SUCCESS);
  void* p = ptrOf(va + kGran);
  cudaPointerAttributes a;
  // Mapped but not yet accessible: copies are refused.
  EXPECT_EQ(cudaMemset(p, 1, 16), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  const CUmemAccessDesc rw = access(1);
  ASSERT_EQ(d.setAccess(va + kGran, 2 * kGran, &rw, 1), CUDA_SUCCESS);
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(p) + 77), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 1);
  EXPECT_EQ(cudaMemset(p, 0x11, 2 * kGran), cudaSuccess);
  EXPECT_EQ(cudaMemset(p, 0x11, 2 * kGran + 1), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);

  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(d.getAddressRange(&base, &size, va + kGran + 5), CUDA_SUCCESS);
  EXPECT_EQ(base, va + kGran);
  EXPECT_EQ(size, 2 * kGran);
  EXPECT_EQ(d.getAddressRange(nullptr, &size, va + kGran), CUDA_SUCCESS);  // either output may be null
  int ord = -1;
  EXPECT_EQ(d.pointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + kGran), CUDA_SUCCESS);
  EXPECT_EQ(ord, 1);
  unsigned type = 0;
  EXPECT_EQ(d.pointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va + kGran), CUDA_SUCCESS);
  EXPECT_EQ(type, unsigned(CU_MEMORYTYPE_DEVICE));
  CUdeviceptr start = 0;
  size_t rangeSize = 0;
  EXPECT_EQ(d.pointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + kGran + 1), CUDA_SUCCESS);
  EXPECT_EQ(start, va);  // the reservation, not the mapping
  EXPECT_EQ(d.pointerGetAttribute(&rangeSize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + kGran + 1), CUDA_SUCCESS);
  EXPECT_EQ(rangeSize, 4 * kGran);
  std::vector<char> host(64);
  EXPECT_EQ(d.pointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(uintptr_t(host.data()))),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.getAddressRange(&base, &size, CUdeviceptr(uintptr_t(host.data()))), CUDA_ERROR_NOT_FOUND);

  // Released while mapped: the mapping keeps the memory; retain gives the same handle back.
  ASSERT_EQ(d.release(h), CUDA_SUCCESS);
  EXPECT_EQ(d.release(h), CUDA_ERROR_INVALID_VALUE);  // no reference left to drop
  EXPECT_EQ(cudaMemset(p, 0x22, 16), cudaSuccess);
  CUmemGenericAllocationHandle back = 0;
  ASSERT_EQ(d.retain(&back, static_cast<char*>(p) + kGran + 3), CUDA_SUCCESS);
  EXPECT_EQ(back, h);
  // Unmapping: whole mappings only.
  EXPECT_EQ(d.unmap(va + kGran, kGran), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.unmap(va, kGran), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.addressFree(va, 4 * kGran), CUDA_ERROR_INVALID_VALUE);  // still mapped
  ASSERT_EQ(d.unmap(va + kGran, 2 * kGran), CUDA_SUCCESS);
  EXPECT_EQ(cudaMemset(p, 0, 16), cudaErrorInvalidValue);  // gone from the registry
  expectLastError(cudaErrorInvalidValue);
  ASSERT_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(d.unmap(va + kGran, 2 * kGran), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.release(back), CUDA_SUCCESS);
  EXPECT_EQ(d.release(back), CUDA_ERROR_INVALID_VALUE);  // freed
  EXPECT_EQ(d.addressFree(va, 2 * kGran), CUDA_ERROR_INVALID_VALUE);  // wrong size
  EXPECT_EQ(d.addressFree(va, 4 * kGran), CUDA_SUCCESS);
  EXPECT_EQ(d.addressFree(va, 4 * kGran), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(VgpuMemory, CuMemAdjacentMappingsCopyAcrossTheSeam) {
  const Driver& d = drv();
  const CUmemAllocationProp prop = deviceProp(0);
  CUmemGenericAllocationHandle h1, h2;
  ASSERT_EQ(d.create(&h1, kGran, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.create(&h2, kGran, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  ASSERT_EQ(d.reserve(&va, 2 * kGran, 4 * kGran, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % (4 * kGran), 0u);  // alignment honoured
  ASSERT_EQ(d.map(va, kGran, 0, h1, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.map(va + kGran, kGran, 0, h2, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.map(va, kGran, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);  // already mapped there
  const CUmemAccessDesc rw[2] = {access(0), access(1)};
  ASSERT_EQ(d.setAccess(va, 2 * kGran, rw, 2), CUDA_SUCCESS);
  const auto data = pattern(8192, 5);
  void* seam = ptrOf(va + kGran - 4096);
  EXPECT_EQ(cudaMemcpy(seam, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<unsigned char> back(8192);
  EXPECT_EQ(cudaMemcpy(back.data(), seam, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, data);
  // Read-only access: devices may read, not write.
  const CUmemAccessDesc ro[2] = {access(0, CU_MEM_ACCESS_FLAGS_PROT_READ), access(1, CU_MEM_ACCESS_FLAGS_PROT_READ)};
  ASSERT_EQ(d.setAccess(va, 2 * kGran, ro, 2), CUDA_SUCCESS);
  EXPECT_EQ(cudaMemcpy(back.data(), seam, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemset(seam, 0, 16), cudaErrorInvalidValue);
  expectLastError(cudaErrorInvalidValue);
  ASSERT_EQ(d.unmap(va, 2 * kGran), CUDA_SUCCESS);  // both mappings in one call
  EXPECT_EQ(d.release(h1), CUDA_SUCCESS);
  EXPECT_EQ(d.release(h2), CUDA_SUCCESS);
  EXPECT_EQ(d.addressFree(va, 2 * kGran), CUDA_SUCCESS);
}

TEST_F(VgpuMemory, CuMemErrorCodes) {
  const Driver& d = drv();
  CUmemAllocationProp prop = deviceProp(0);
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(d.create(&h, kGran + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);  // not a granularity multiple
  EXPECT_EQ(d.create(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.create(&h, kGran, &prop, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.create(nullptr, kGran, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.create(&h, kGran, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  const CUmemAllocationProp fabric = deviceProp(0, CU_MEM_HANDLE_TYPE_FABRIC);
  EXPECT_EQ(d.create(&h, kGran, &fabric, 0), CUDA_ERROR_NOT_SUPPORTED);
  const CUmemAllocationProp noDevice = deviceProp(1000);
  EXPECT_EQ(d.create(&h, kGran, &noDevice, 0), CUDA_ERROR_INVALID_DEVICE);
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(d.create(&h, (total / kGran + 1) * kGran, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  constexpr CUmemGenericAllocationHandle kBogus = 0xdeadbeef;
  EXPECT_EQ(d.release(kBogus), CUDA_ERROR_INVALID_VALUE);
  int fd = -1;
  EXPECT_EQ(d.exportHandle(&fd, kBogus, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_INVALID_VALUE);

  CUdeviceptr va = 0;
  EXPECT_EQ(d.reserve(&va, 0, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.reserve(&va, kGran, 3, 0, 0), CUDA_ERROR_INVALID_VALUE);  // alignment not a power of two
  ASSERT_EQ(d.reserve(&va, 2 * kGran, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.map(va, kGran, 0, kBogus, 0), CUDA_ERROR_INVALID_VALUE);

  const CUmemAllocationProp unshared = deviceProp(0, CU_MEM_HANDLE_TYPE_NONE);
  ASSERT_EQ(d.create(&h, kGran, &unshared, 0), CUDA_SUCCESS);
  EXPECT_EQ(d.exportHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.map(va + kGran, 2 * kGran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // larger than the handle
  EXPECT_EQ(d.map(va + 4096, kGran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);      // unaligned address
  EXPECT_EQ(d.map(va + 2 * kGran, kGran, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // outside the reservation
  EXPECT_EQ(d.map(va, kGran, kGran, h, 0), CUDA_ERROR_INVALID_VALUE);          // past the handle's end
  const CUmemAccessDesc rw = access(0);
  EXPECT_EQ(d.setAccess(va, kGran, &rw, 1), CUDA_ERROR_INVALID_VALUE);  // nothing mapped there
  ASSERT_EQ(d.map(va, kGran, 0, h, 0), CUDA_SUCCESS);
  const CUmemAccessDesc badDev = access(1000);
  EXPECT_EQ(d.setAccess(va, kGran, &badDev, 1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(d.setAccess(va, kGran, nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.setAccess(va, 2 * kGran, &rw, 1), CUDA_ERROR_INVALID_VALUE);  // not fully mapped
  EXPECT_EQ(d.unmap(va + kGran, kGran), CUDA_ERROR_INVALID_VALUE);        // not mapped
  EXPECT_EQ(d.unmap(va, kGran), CUDA_SUCCESS);
  EXPECT_EQ(d.release(h), CUDA_SUCCESS);
  EXPECT_EQ(d.addressFree(va, 2 * kGran), CUDA_SUCCESS);

  CUmemGenericAllocationHandle imported;
  EXPECT_EQ(d.importHandle(&imported, reinterpret_cast<void*>(intptr_t(-1)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_INVALID_VALUE);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  EXPECT_EQ(d.importHandle(&imported, reinterpret_cast<void*>(intptr_t(pipefd[0])),
                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_INVALID_VALUE);
  close(pipefd[0]);
  close(pipefd[1]);
  const int foreign = memfd_create("not-cuda", MFD_CLOEXEC);  // right size, not CUDA's memory
  ASSERT_GE(foreign, 0);
  ASSERT_EQ(ftruncate(foreign, off_t(kGran)), 0);
  EXPECT_EQ(d.importHandle(&imported, reinterpret_cast<void*>(intptr_t(foreign)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_INVALID_VALUE);
  close(foreign);
  EXPECT_EQ(d.importHandle(&imported, nullptr, CU_MEM_HANDLE_TYPE_FABRIC), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(VgpuMemory, CuMemFdSharedWithAForkedChild) {
  const Driver& d = drv();
  constexpr size_t kBytes = 2 * kGran;
  const CUmemAllocationProp prop = deviceProp(0);
  CUmemGenericAllocationHandle h;
  ASSERT_EQ(d.create(&h, kBytes, &prop, 0), CUDA_SUCCESS);
  const CUdeviceptr va = mapHandle(h, kBytes, 0);
  ASSERT_NE(va, 0u);
  ASSERT_EQ(cudaMemset(ptrOf(va), 0, kBytes), cudaSuccess);
  int fd = -1;
  ASSERT_EQ(d.exportHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  ASSERT_GE(fd, 0);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const auto data = pattern(kBytes, 77);

  const pid_t pid = forkChild([&]() -> int {
    close(sv[0]);
    const int theirs = recvFd(sv[1]);
    if (theirs < 0) return 1;
    CUmemGenericAllocationHandle mine;
    if (d.importHandle(&mine, reinterpret_cast<void*>(intptr_t(theirs)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) !=
        CUDA_SUCCESS)
      return 2;
    close(theirs);  // the import holds its own reference
    const CUdeviceptr p = mapHandle(mine, kBytes, 0);
    if (p == 0) return 3;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, ptrOf(p)) != cudaSuccess || a.type != cudaMemoryTypeDevice || a.device != 0)
      return 4;
    std::memcpy(ptrOf(p), data.data(), kBytes);
    if (d.unmap(p, kBytes) != CUDA_SUCCESS || d.release(mine) != CUDA_SUCCESS) return 6;
    if (d.addressFree(p, kBytes) != CUDA_SUCCESS) return 7;
    return 0;
  });
  ASSERT_GT(pid, 0);
  close(sv[1]);
  EXPECT_TRUE(sendFd(sv[0], fd));
  close(fd);
  EXPECT_EQ(waitChild(pid), 0);
  close(sv[0]);
  std::vector<unsigned char> back(kBytes);
  ASSERT_EQ(cudaMemcpy(back.data(), ptrOf(va), kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, data);
  EXPECT_EQ(d.unmap(va, kBytes), CUDA_SUCCESS);
  EXPECT_EQ(d.release(h), CUDA_SUCCESS);
  EXPECT_EQ(d.addressFree(va, kBytes), CUDA_SUCCESS);
}

TEST_F(VgpuMemory, CuMemCountsAgainstTheDevice) {
  const Driver& d = drv();
  size_t free0 = 0, free1 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  const CUmemAllocationProp prop = deviceProp(0);
  CUmemGenericAllocationHandle h;
  ASSERT_EQ(d.create(&h, 8 * kGran, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, 8 * kGran);
  EXPECT_EQ(d.release(h), CUDA_SUCCESS);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free1, free0);
}

}  // namespace
