// GPU checks of device/cuda/cuda_memory.h, ncclMemAlloc / ncclMemFree and the GPU transports
// (transports/p2p/cuda_p2p.h) (label gpu; every test skips itself when no CUDA device is visible):
//   - ncclMemAlloc sizes and alignment, memory usable end to end, freed;
//   - a cuMem allocation exported as a POSIX fd by another process, passed over an IpcSocket,
//     imported and mapped here, data checked both ways through cudaMemcpy; the same with a
//     legacy cudaIpc handle;
//   - the FIFO memory of a P2P/cuda connection (two ranks on one device) and of an SHM/cuda one
//     reachable from both ends;
//   - releases deferred while an accl launch may run (device/cuda/deferred_free.h).
// Cross-process cases run a second process: this binary again, with a filter naming the child
// test and the parameters in its environment (CUDA cannot be used in a forked child of a process
// that already initialised it).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device/cuda/cuda_memory.h"
#include "device/cuda/deferred_free.h"
#include "device/device_probe.h"
#include "nccl.h"
#include "support/transport_ends.h"
#include "transports/p2p/cuda_p2p.h"
#include "util/ipc_socket.h"

extern char** environ;

namespace accl {
namespace {

bool haveGpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

#define REQUIRE_GPU() \
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device visible"

std::vector<unsigned char> pattern(size_t n, int seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 13 + seed) & 0xff);
  return v;
}

// --- ncclMemAlloc / ncclMemFree ---

TEST(CudaMemGpu, MemAllocSizesAndAlignment) {
  REQUIRE_GPU();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const size_t before = cuda::liveMemAllocs();
  for (size_t size : {size_t(1), size_t(4096), size_t(1) << 20, (size_t(3) << 20) + 7, size_t(64) << 20}) {
    void* p = nullptr;
    ASSERT_EQ(ncclMemAlloc(&p, size), ncclSuccess) << size;
    ASSERT_NE(p, nullptr) << size;
    // cuMem allocations start on the recommended granularity (2 MiB and up); cudaMalloc on 256 B.
    const uintptr_t align = cuda::cuMemUsable(0) ? (uintptr_t(2) << 20) : 256;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << size;
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
    EXPECT_EQ(attr.device, 0);
    std::vector<unsigned char> in = pattern(size, 3), out(size, 0);
    ASSERT_EQ(cudaMemcpy(p, in.data(), size, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(out.data(), p, size, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(in, out) << size;
    EXPECT_EQ(cuda::liveMemAllocs(), before + 1);
    EXPECT_EQ(ncclMemFree(p), ncclSuccess);
    EXPECT_EQ(cuda::liveMemAllocs(), before);
  }
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ncclMemAlloc(&p, 0), ncclSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);
  EXPECT_EQ(ncclMemAlloc(nullptr, 16), ncclInvalidArgument);
}

TEST(CudaMemGpu, MemAllocWithCumemOffUsesCudaMalloc) {
  REQUIRE_GPU();
  setenv("NCCL_CUMEM_ENABLE", "0", 1);
  cuda::DeviceMemory m;
  ncclResult_t r = cuda::deviceAlloc(12345, 0, true, &m);
  unsetenv("NCCL_CUMEM_ENABLE");
  ASSERT_EQ(r, ncclSuccess);
  EXPECT_FALSE(m.cumem);
  EXPECT_EQ(m.bytes, 12345u);
  unsigned char h[cuda::kIpcHandleBytes];
  EXPECT_EQ(cuda::ipcExport(m, h), ncclSuccess);
  int fd = -1;
  EXPECT_NE(cuda::exportFd(m, &fd), ncclSuccess);  // not cuMem: no fd
  cuda::deviceFree(&m);
  EXPECT_EQ(m.ptr, nullptr);
}

// --- Cross-process export / import ---

constexpr size_t kShareBytes = (size_t(3) << 20) + 123;
constexpr unsigned char kParentMark = 0xa5;

// Runs this binary as the exporting child; returns its pid (stdin: the parent's "done" byte;
// fd 3: the IPC handle in ipc mode).
pid_t spawnChild(const std::string& mode, const IpcAddress& to, uint64_t token, int* toChild, int* fromChild) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 3);  // gtest owns stdout
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  char buf[256];
  std::snprintf(buf, sizeof(buf), "ACCL_GPU_IPC_CHILD=%s:%llx:%llx:%llx", mode.c_str(), (unsigned long long)to.scope,
                (unsigned long long)to.nonce, (unsigned long long)token);
  env.emplace_back(buf);
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string filter = mode == "p2p" ? "--gtest_filter=CudaMemGpuChild.P2pReceiver" : "--gtest_filter=CudaMemGpuChild.Export";
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  *toChild = in[1];
  *fromChild = out[0];
  return pid;
}

// The child's exit code within `seconds` (killed after: -1).
int waitChild(pid_t pid, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

bool readAll(int fd, void* buf, size_t n, int timeoutMs) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, timeoutMs) <= 0) return false;
    ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The child: allocates, fills, shares (fd over the socket, or a cudaIpc handle on stdout), waits
// for the parent's byte on stdin, then checks the parent's mark. Exit code 0 = all good.
TEST(CudaMemGpuChild, Export) {
  const char* spec = std::getenv("ACCL_GPU_IPC_CHILD");
  if (spec == nullptr) GTEST_SKIP() << "runs only as the child of CudaMemGpu.*Between processes";
  char mode[8] = {};
  unsigned long long scope = 0, nonce = 0, token = 0;
  if (std::sscanf(spec, "%7[^:]:%llx:%llx:%llx", mode, &scope, &nonce, &token) != 4) std::_Exit(10);
  const bool fdMode = std::string(mode) == "fd";
  if (fdMode) unsetenv("NCCL_CUMEM_ENABLE"); else setenv("NCCL_CUMEM_ENABLE", "0", 1);
  cuda::DeviceMemory m;
  if (cuda::deviceAlloc(kShareBytes, 0, fdMode, &m) != ncclSuccess || m.cumem != fdMode) std::_Exit(11);
  std::vector<unsigned char> in = pattern(kShareBytes, 7);
  if (cudaMemcpy(m.ptr, in.data(), kShareBytes, cudaMemcpyHostToDevice) != cudaSuccess) std::_Exit(12);
  if (fdMode) {
    int fd = -1;
    if (cuda::exportFd(m, &fd) != ncclSuccess) std::_Exit(13);
    IpcFdHeader h;
    h.scope = scope;
    h.token = token;
    h.fromRank = 1;
    h.tag = 0;
    h.bytes = m.bytes;
    IpcSocket s;
    if (s.sendFd(IpcAddress{scope, nonce, 0, 0}, fd, h, 30000) != ncclSuccess) std::_Exit(14);
    close(fd);
  } else {
    unsigned char handle[cuda::kIpcHandleBytes];
    if (cuda::ipcExport(m, handle) != ncclSuccess) std::_Exit(13);
    uint64_t bytes = m.bytes;
    if (write(3, handle, sizeof(handle)) != sizeof(handle) || write(3, &bytes, sizeof(bytes)) != sizeof(bytes))
      std::_Exit(14);
  }
  char done = 0;
  if (!readAll(0, &done, 1, 60000)) std::_Exit(15);
  std::vector<unsigned char> back(kShareBytes);
  if (cudaMemcpy(back.data(), m.ptr, kShareBytes, cudaMemcpyDeviceToHost) != cudaSuccess) std::_Exit(16);
  for (size_t i = 0; i < kShareBytes; ++i)
    if (back[i] != (i < 4096 ? kParentMark : in[i])) std::_Exit(17);
  cuda::deviceFree(&m);
  std::_Exit(0);
}

void importAndCheck(const std::string& mode) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  IpcSocket sock;
  ASSERT_EQ(sock.open(0xfeed, 0), ncclSuccess);
  const uint64_t token = 0x1122334455667788ull;
  int toChild = -1, fromChild = -1;
  pid_t pid = spawnChild(mode, sock.address(), token, &toChild, &fromChild);
  ASSERT_GT(pid, 0);
  cuda::ImportedMemory imported;
  ncclResult_t r = ncclSystemError;
  if (mode == "fd") {
    int fd = -1;
    IpcFdHeader h;
    r = sock.recvFd(1, token, 0, 60000, &fd, &h);
    if (r == ncclSuccess) {
      EXPECT_GE(h.bytes, kShareBytes);
      r = cuda::importFd(fd, h.bytes, 0, &imported);
      close(fd);
    }
  } else {
    unsigned char handle[cuda::kIpcHandleBytes];
    uint64_t bytes = 0;
    if (readAll(fromChild, handle, sizeof(handle), 60000) && readAll(fromChild, &bytes, sizeof(bytes), 5000))
      r = cuda::ipcImport(handle, bytes, 0, &imported);
  }
  EXPECT_EQ(r, ncclSuccess);
  if (r == ncclSuccess) {
    std::vector<unsigned char> got(kShareBytes);
    EXPECT_EQ(cudaMemcpy(got.data(), imported.ptr, kShareBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, pattern(kShareBytes, 7));
    EXPECT_EQ(cudaMemset(imported.ptr, kParentMark, 4096), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  char done = 1;
  EXPECT_EQ(write(toChild, &done, 1), 1);
  EXPECT_EQ(waitChild(pid, 90), 0) << "the child's exit code names the step that failed (see CudaMemGpuChild)";
  cuda::releaseImported(&imported);
  close(toChild);
  close(fromChild);
}

TEST(CudaMemGpu, CumemFdBetweenProcesses) {
  REQUIRE_GPU();
  if (!cuda::cuMemUsable(0)) GTEST_SKIP() << "cuMem with POSIX fds is not usable on device 0";
  importAndCheck("fd");
}

TEST(CudaMemGpu, CudaIpcHandleBetweenProcesses) {
  REQUIRE_GPU();
  importAndCheck("ipc");
}

// --- P2P/cuda between two processes on one device (cuMem fds over the ipc socket, or cudaIpc) ---

PeerInfo gpuPeerInfo(int rank) {
  PeerInfo p = test::localPeerInfo(rank);
  p.pidHash = 0x1000 + static_cast<uint64_t>(getpid());  // one per process
  p.cudaDev = 0;
  p.busId = cudaDeviceBusId(0);
  p.gpuFifos = 1;
  return p;
}

bool writeAll(int fd, const void* buf, size_t n) { return write(fd, buf, n) == static_cast<ssize_t>(n); }

// One end of a connection whose peer is another process; PeerInfos and blobs cross over pipes.
struct RemoteEnd {
  PeerInfo self, peer;
  ConnSetup setup{};
  ConnEnd end;
  ConnBlob blob{};
  ~RemoteEnd() {
    if (end.resources) kCudaP2pTransport.side(end.side).free(&end);
  }
  // Empty on success, else the step that failed.
  std::string join(ConnSide side, int rank, int in, int out) {
    self = gpuPeerInfo(rank);
    if (!writeAll(out, &self, sizeof(self)) || !readAll(in, &peer, sizeof(peer), 60000)) return "PeerInfo exchange";
    if (gpuLinkFor(self, peer) != GpuLink::kP2p) return "the pair was not given P2P";
    const FifoLayout layout{4096 + 64, 128};
    setup = ConnSetup{nullptr, &self, &peer, 2, layout};
    blob.magic = ConnBlob::kMagic;
    blob.side = static_cast<uint32_t>(side);
    blob.rank = rank;
    blob.layout = layout;
    end.transport = &kCudaP2pTransport;
    if (kCudaP2pTransport.side(side).setup(setup, &end, &blob) != ncclSuccess) return "setup";
    ConnBlob theirs{};
    if (!writeAll(out, &blob, sizeof(blob)) || !readAll(in, &theirs, sizeof(theirs), 60000)) return "blob exchange";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    ncclResult_t r;
    while ((r = kCudaP2pTransport.side(side).connect(setup, theirs, &end)) == ncclInProgress &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (r != ncclSuccess) return std::string("connect: ") + ncclGetLastError(nullptr);
    char ack = 1, peerAck = 0;
    if (!writeAll(out, &ack, 1) || !readAll(in, &peerAck, 1, 60000)) return "ack";
    kCudaP2pTransport.side(side).finish(&end);
    return "";
  }
};

// The receiving child: its FIFO (tail + slots) in its device memory, written by the parent.
TEST(CudaMemGpuChild, P2pReceiver) {
  const char* spec = std::getenv("ACCL_GPU_P2P_CHILD");
  if (spec == nullptr) GTEST_SKIP() << "runs only as the child of CudaTransportGpu.P2pBetweenProcesses";
  RemoteEnd e;
  if (!e.join(ConnSide::kRecv, 0, 0, 3).empty()) std::_Exit(20);
  char written = 0;
  if (!readAll(0, &written, 1, 60000)) std::_Exit(21);
  uint64_t tail = 0;
  std::vector<unsigned char> got(e.end.view.layout.simpleSlotBytes);
  if (cudaMemcpy(&tail, &e.end.view.tail->value, 8, cudaMemcpyDefault) != cudaSuccess || tail != 7) std::_Exit(22);
  if (cudaMemcpy(got.data(), e.end.view.simpleSlot(1), got.size(), cudaMemcpyDefault) != cudaSuccess ||
      got != pattern(got.size(), 21))
    std::_Exit(23);
  const uint64_t head = 3;  // into the parent's device memory
  if (cudaMemcpy(&e.end.view.head->value, &head, 8, cudaMemcpyDefault) != cudaSuccess) std::_Exit(24);
  if (cudaDeviceSynchronize() != cudaSuccess || !writeAll(3, &written, 1)) std::_Exit(25);
  char bye = 0;
  readAll(0, &bye, 1, 60000);  // the parent is done reading our memory
  std::_Exit(0);
}

void p2pBetweenProcesses() {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  int toChild = -1, fromChild = -1;
  // The child's parameters: only its role (spawnChild's socket fields are unused here).
  setenv("ACCL_GPU_P2P_CHILD", "1", 1);
  pid_t pid = spawnChild("p2p", IpcAddress{}, 0, &toChild, &fromChild);
  unsetenv("ACCL_GPU_P2P_CHILD");
  ASSERT_GT(pid, 0);
  {
    RemoteEnd e;
    std::string why = e.join(ConnSide::kSend, 1, fromChild, toChild);
    EXPECT_EQ(why, "");
    if (why.empty()) {
      cudaPointerAttributes attr{};
      EXPECT_EQ(cudaPointerGetAttributes(&attr, e.end.view.tail), cudaSuccess);
      EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
      const uint64_t tail = 7;
      std::vector<unsigned char> slot = pattern(e.end.view.layout.simpleSlotBytes, 21);
      EXPECT_EQ(cudaMemcpy(e.end.view.simpleSlot(1), slot.data(), slot.size(), cudaMemcpyDefault), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(&e.end.view.tail->value, &tail, 8, cudaMemcpyDefault), cudaSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      char written = 1;
      EXPECT_TRUE(writeAll(toChild, &written, 1));
      char back = 0;
      EXPECT_TRUE(readAll(fromChild, &back, 1, 60000));
      uint64_t head = 0;
      EXPECT_EQ(cudaMemcpy(&head, &e.end.view.head->value, 8, cudaMemcpyDefault), cudaSuccess);
      EXPECT_EQ(head, 3u) << "the child's store into this process's device memory";
    }
    char bye = 1;
    writeAll(toChild, &bye, 1);
    EXPECT_EQ(waitChild(pid, 90), 0) << "the child's exit code names the step that failed (see CudaMemGpuChild)";
  }
  close(toChild);
  close(fromChild);
}

TEST(CudaTransportGpu, P2pBetweenProcesses) {  // cuMem fds when usable, else cudaIpc
  REQUIRE_GPU();
  p2pBetweenProcesses();
}

TEST(CudaTransportGpu, P2pBetweenProcessesWithCudaIpc) {
  REQUIRE_GPU();
  setenv("NCCL_CUMEM_ENABLE", "0", 1);  // inherited by the child: both ends use cudaIpc handles
  p2pBetweenProcesses();
  unsetenv("NCCL_CUMEM_ENABLE");
}

// --- GPU transports: the FIFO memory is reachable from both ends ---

void checkFifoReachable(test::EndPair& pair) {
  FifoView& s = pair.send.end.view;
  FifoView& r = pair.recv.end.view;
  ASSERT_NE(s.tail, nullptr);
  ASSERT_NE(r.head, nullptr);
  // The sender publishes tail and writes a slot; the receiver sees both in its own memory.
  const uint64_t tail = 5;
  ASSERT_EQ(cudaMemcpy(&s.tail->value, &tail, sizeof(tail), cudaMemcpyDefault), cudaSuccess);
  std::vector<unsigned char> slot = pattern(s.layout.simpleSlotBytes, 9);
  ASSERT_EQ(cudaMemcpy(s.simpleSlot(3), slot.data(), slot.size(), cudaMemcpyDefault), cudaSuccess);
  uint64_t seen = 0;
  ASSERT_EQ(cudaMemcpy(&seen, &r.tail->value, sizeof(seen), cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(seen, tail);
  std::vector<unsigned char> got(slot.size());
  ASSERT_EQ(cudaMemcpy(got.data(), r.simpleSlot(3), got.size(), cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(got, slot);
  // The receiver releases head in the sender's memory.
  const uint64_t head = 4;
  ASSERT_EQ(cudaMemcpy(&r.head->value, &head, sizeof(head), cudaMemcpyDefault), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&seen, &s.head->value, sizeof(seen), cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(seen, head);
  EXPECT_EQ(s.tail, r.tail) << "one process: both ends address the receiver's memory alike";
}

FifoLayout smallLayout() { return FifoLayout{4096 + 64, 128}; }

TEST(CudaTransportGpu, P2pTwoRanksOnOneDevice) {
  REQUIRE_GPU();
  test::EndPair pair(kCudaP2pTransport, smallLayout());
  ASSERT_TRUE(pair.setUp()) << pair.recv.setupResult << " " << pair.send.setupResult;
  ASSERT_EQ(pair.connect(), ncclSuccess);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, pair.send.end.view.tail), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice) << "the receiver's FIFO lives in device memory";
  ASSERT_EQ(cudaPointerGetAttributes(&attr, pair.recv.end.view.head), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice) << "the sender's head lives in device memory";
  checkFifoReachable(pair);
}

TEST(CudaTransportGpu, ShmPinnedHostMemory) {
  REQUIRE_GPU();
  test::EndPair pair(kCudaShmTransport, smallLayout());
  ASSERT_TRUE(pair.setUp());
  ASSERT_EQ(pair.connect(), ncclSuccess);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, pair.send.end.view.tail), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "registered (pinned) host memory";
  EXPECT_EQ(attr.devicePointer, static_cast<void*>(pair.send.end.view.tail));
  // Two processes' mappings in one: tail addresses differ, the memory is the same.
  FifoView& s = pair.send.end.view;
  FifoView& r = pair.recv.end.view;
  const uint64_t tail = 11;
  ASSERT_EQ(cudaMemcpy(&s.tail->value, &tail, sizeof(tail), cudaMemcpyDefault), cudaSuccess);
  uint64_t seen = 0;
  ASSERT_EQ(cudaMemcpy(&seen, &r.tail->value, sizeof(seen), cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(seen, tail);
}

TEST(CudaTransportGpu, SelectionForGpuRanks) {
  REQUIRE_GPU();
  PeerInfo a = test::localPeerInfo(0), b = test::localPeerInfo(1);
  a.busId = b.busId = cudaDeviceBusId(0);
  ASSERT_GE(a.busId, 0);
  EXPECT_EQ(gpuLinkFor(a, b), GpuLink::kNone) << "host-backend ranks (gpuFifos 0) keep the host transports";
  a.gpuFifos = b.gpuFifos = 1;
  GpuPairFacts f = gpuPairFacts(a, b);
  EXPECT_TRUE(f.sameDevice);
  EXPECT_TRUE(f.sameProcess);
  EXPECT_EQ(gpuLinkFor(a, b), GpuLink::kP2p);
  EXPECT_STREQ(transportAt(pickTransport(a, b))->name, "P2P/cuda");
}

// --- releases deferred while accl kernels may run ---

// A launch counts from its LaunchMark until its completion event fires (here the event follows a
// host function that blocks the stream until `go`), and a graph hold counts until dropped;
// meanwhile releases queue, and the first release that finds nothing running runs them all,
// oldest first.
TEST(CudaDeferredFree, ReleasesWaitForLaunchesAndGraphHolds) {
  REQUIRE_GPU();
  cudaStream_t stream;
  cudaEvent_t done;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), cudaSuccess);
  std::atomic<bool> go{false};
  const auto block = [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  ASSERT_EQ(cudaLaunchHostFunc(stream, block, &go), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, stream), cudaSuccess);
  const size_t queuedBefore = cuda::deferredReleases().count;
  std::vector<int> ran;
  {
    cuda::LaunchMark mark;
    cuda::releaseWhenIdle("test release 1", 4096, [&] { ran.push_back(1); });
    EXPECT_TRUE(ran.empty()) << "released while a launch was being enqueued";
    mark.completesWith(done);
  }
  cuda::releaseDeferred();
  EXPECT_TRUE(ran.empty()) << "released before the launch's completion event";
  EXPECT_EQ(cuda::deferredReleases().count, queuedBefore + 1);
  go = true;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cuda::holdForGraphs();
  cuda::releaseDeferred();
  EXPECT_TRUE(ran.empty()) << "released while a communicator holds captured launches";
  cuda::dropGraphHold();
  cuda::releaseWhenIdle("test release 2", 4096, [&] { ran.push_back(2); });
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_EQ(cuda::deferredReleases().count, 0u);
  cuda::launchReaped(done);  // already forgotten once seen complete: harmless
  cudaEventDestroy(done);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace accl
