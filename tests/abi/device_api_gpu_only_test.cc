// GPU-only entry points on the host backend, called through libnccl.so: one-sided signals
// (ncclPutSignal / ncclSignal / ncclWaitSignal), device pointers and CFT LE info of windows, GIN
// scratch requirements. With valid arguments each returns ncclInvalidUsage and a last error that
// names the call and says what it needs; bad arguments are ncclInvalidArgument first; nothing
// crashes. Also ncclSetEncryption: its checks, and communicators made under PSK and after NONE.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device_api_client.h"

namespace accl::abi {
namespace {

// A registered window of `comm` over its own host buffer of kWindowBytes, deregistered at scope
// exit.
constexpr size_t kWindowBytes = 4096;
struct Window {
  ncclComm_t comm;
  std::vector<char> buffer = std::vector<char>(kWindowBytes);
  ncclWindow_t win = nullptr;
  explicit Window(ncclComm_t c) : comm(c) {
    EXPECT_EQ(ncclCommWindowRegister(c, buffer.data(), buffer.size(), &win, NCCL_WIN_DEFAULT), ncclSuccess)
        << ncclGetLastError(nullptr);
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  ~Window() {
    if (win != nullptr) EXPECT_EQ(ncclCommWindowDeregister(comm, win), ncclSuccess) << ncclGetLastError(nullptr);
  }
};

constexpr const char* kHostBackend = "host backend";

// ---- One-sided signals --------------------------------------------------------------------------

TEST(GpuOnly, SignalsAreRefusedOnTheHostBackend) {
  LocalComms comms(3);
  Window wins[3] = {Window(comms[0]), Window(comms[1]), Window(comms[2])};
  int data[7] = {1, 2, 3, 4, 5, 6, 7};
  for (int r = 0; r < 3; ++r) {
    int peer = (r + 1) % 3;
    expectRefused(ncclPutSignal(data, 7, ncclInt32, peer, wins[r].win, 0, 0, 0, 0, comms[r], nullptr), "ncclPutSignal",
                  kHostBackend);
    // The last bytes of the window are a valid target too.
    expectRefused(ncclPutSignal(data, 7, ncclInt32, peer, wins[r].win, kWindowBytes - 28, 0, 0, 0, comms[r], nullptr),
                  "ncclPutSignal", kHostBackend);
    expectRefused(ncclSignal(peer, 0, 0, 0, comms[r], nullptr), "ncclSignal", kHostBackend);
    ncclWaitSignalDesc_t descs[2] = {{1, peer, 0, 0}, {2, (r + 2) % 3, 0, 0}};
    expectRefused(ncclWaitSignal(2, descs, comms[r], nullptr), "ncclWaitSignal", kHostBackend);
  }
  // The communicators still work afterwards.
  int count = 0;
  EXPECT_EQ(ncclCommCount(comms[2], &count), ncclSuccess);
  EXPECT_EQ(count, 3);
}

TEST(GpuOnly, WaitingForNoSignalSucceeds) {
  LocalComms comms(2);
  EXPECT_EQ(ncclWaitSignal(0, nullptr, comms[0], nullptr), ncclSuccess) << ncclGetLastError(nullptr);
}

TEST(GpuOnly, SignalArgumentsAreCheckedFirst) {
  LocalComms comms(2);
  Window win(comms[0]), otherWin(comms[1]);
  int data[3] = {};
  ncclComm_t c = comms[0];
  // Bad communicator.
  expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, 1, win.win, 0, 0, 0, 0, nullptr, nullptr), "ncclPutSignal");
  expectInvalidArgument(ncclSignal(1, 0, 0, 0, nullptr, nullptr), "ncclSignal");
  expectInvalidArgument(ncclWaitSignal(0, nullptr, nullptr, nullptr), "ncclWaitSignal");
  // Peer outside [0, nranks).
  for (int peer : {-1, 2, 1000}) {
    expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, peer, win.win, 0, 0, 0, 0, c, nullptr), "ncclPutSignal",
                          "peer");
    expectInvalidArgument(ncclSignal(peer, 0, 0, 0, c, nullptr), "ncclSignal", "peer");
    ncclWaitSignalDesc_t d = {1, peer, 0, 0};
    expectInvalidArgument(ncclWaitSignal(1, &d, c, nullptr), "ncclWaitSignal", "peer");
  }
  // Reserved flags, negative ids.
  expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, 1, win.win, 0, 0, 0, 1, c, nullptr), "ncclPutSignal",
                        "flags");
  expectInvalidArgument(ncclSignal(1, 0, 0, 0x80000000u, c, nullptr), "ncclSignal", "flags");
  expectInvalidArgument(ncclSignal(1, -1, 0, 0, c, nullptr), "ncclSignal", "sigIdx");
  expectInvalidArgument(ncclSignal(1, 0, -3, 0, c, nullptr), "ncclSignal", "ctx");
  // PutSignal's buffers and type.
  expectInvalidArgument(ncclPutSignal(nullptr, 3, ncclInt32, 1, win.win, 0, 0, 0, 0, c, nullptr), "ncclPutSignal",
                        "localbuff");
  expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, 1, nullptr, 0, 0, 0, 0, c, nullptr), "ncclPutSignal",
                        "peerWin");
  expectInvalidArgument(ncclPutSignal(data, 3, static_cast<ncclDataType_t>(12), 1, win.win, 0, 0, 0, 0, c, nullptr),
                        "ncclPutSignal", "datatype");
  // A window that is not one of this communicator's, or too small for the write.
  expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, 1, otherWin.win, 0, 0, 0, 0, c, nullptr), "ncclPutSignal",
                        "belongs to comm");
  expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, 1, win.win, kWindowBytes - 11, 0, 0, 0, c, nullptr),
                        "ncclPutSignal", "do not fit");
  expectInvalidArgument(ncclPutSignal(data, 1, ncclInt8, 1, win.win, kWindowBytes + 1, 0, 0, 0, c, nullptr),
                        "ncclPutSignal", "do not fit");
  expectInvalidArgument(ncclPutSignal(data, SIZE_MAX / 2, ncclInt64, 1, win.win, 0, 0, 0, 0, c, nullptr),
                        "ncclPutSignal", "overflows");
  {
    ncclWindow_t stale = nullptr;
    std::vector<char> buf(64);
    ASSERT_EQ(ncclCommWindowRegister(c, buf.data(), buf.size(), &stale, NCCL_WIN_DEFAULT), ncclSuccess);
    ASSERT_EQ(ncclCommWindowDeregister(c, stale), ncclSuccess);
    expectInvalidArgument(ncclPutSignal(data, 3, ncclInt32, 1, stale, 0, 0, 0, 0, c, nullptr), "ncclPutSignal",
                          "not registered");
  }
  // Zero elements from a NULL buffer is a signal without data: valid, hence refused as GPU-only.
  expectRefused(ncclPutSignal(nullptr, 0, ncclFloat32, 1, win.win, 0, 0, 0, 0, c, nullptr), "ncclPutSignal");
  // WaitSignal's descriptors.
  expectInvalidArgument(ncclWaitSignal(-1, nullptr, c, nullptr), "ncclWaitSignal", "nDesc");
  expectInvalidArgument(ncclWaitSignal(2, nullptr, c, nullptr), "ncclWaitSignal", "signalDescs");
  ncclWaitSignalDesc_t descs[3] = {{1, 1, 0, 0}, {1, 0, 0, 0}, {-1, 1, 0, 0}};
  expectInvalidArgument(ncclWaitSignal(3, descs, c, nullptr), "ncclWaitSignal", "signalDescs[2].opCnt");
  descs[2] = {1, 1, -1, 0};
  expectInvalidArgument(ncclWaitSignal(3, descs, c, nullptr), "ncclWaitSignal", "signalDescs[2].sigIdx");
  descs[2] = {1, 1, 0, -1};
  expectInvalidArgument(ncclWaitSignal(3, descs, c, nullptr), "ncclWaitSignal", "signalDescs[2].ctx");
}

TEST(GpuOnly, SignalsOnADestroyedCommAreRejected) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclCommDestroy(comm), ncclSuccess);
  // The registry of live communicators lets the call reject the stale handle instead of reading it.
  EXPECT_EQ(ncclSignal(0, 0, 0, 0, comm, nullptr), ncclInvalidArgument) << ncclGetLastError(nullptr);
}

// ---- Device pointers and CFT LE info of windows -------------------------------------------------

TEST(GpuOnly, WindowDevicePointersAreRefused) {
  LocalComms comms(2);
  Window win(comms[0]);
  int sentinel = 0;
  void* out = &sentinel;
  expectRefused(ncclGetLsaMultimemDevicePointer(win.win, 0, &out), "ncclGetLsaMultimemDevicePointer", "multicast");
  EXPECT_EQ(out, nullptr) << "a refused query leaves a NULL pointer, never a stale one";
  ncclMultimemHandle mc{&sentinel};
  out = &sentinel;
  expectRefused(ncclGetMultimemDevicePointer(win.win, 64, mc, &out), "ncclGetMultimemDevicePointer");
  EXPECT_EQ(out, nullptr);
  for (int rank : {0, 1}) {
    out = &sentinel;
    expectRefused(ncclGetLsaDevicePointer(win.win, 128, rank, &out), "ncclGetLsaDevicePointer", "peer's window");
    EXPECT_EQ(out, nullptr);
    out = &sentinel;
    expectRefused(ncclGetPeerDevicePointer(win.win, 4095, rank, &out), "ncclGetPeerDevicePointer", "peer's window");
    EXPECT_EQ(out, nullptr);
  }
  ncclCftLeId le = 77;
  size_t leOffset = 77;
  expectRefused(ncclGetMultimemDeviceLeInfo(win.win, 0, &le, &leOffset), "ncclGetMultimemDeviceLeInfo", "CFT");
  EXPECT_EQ(le, 0u);
  EXPECT_EQ(leOffset, 0u);
  expectRefused(ncclGetCftDeviceLeInfo(win.win, 0, 0, ncclTeam{1, 0, 1}, &le, &leOffset), "ncclGetCftDeviceLeInfo",
                "CFT");
  expectRefused(ncclGetPeerDeviceLeInfo(win.win, 0, 1, &le, &leOffset), "ncclGetPeerDeviceLeInfo", "CFT");
}

TEST(GpuOnly, WindowQueryArgumentsAreCheckedFirst) {
  LocalComms comms(1);
  Window win(comms[0]);
  void* out = nullptr;
  ncclCftLeId le = 0;
  size_t leOffset = 0;
  ncclMultimemHandle mc{&out};
  expectInvalidArgument(ncclGetLsaMultimemDevicePointer(nullptr, 0, &out), "ncclGetLsaMultimemDevicePointer", "window");
  expectInvalidArgument(ncclGetLsaMultimemDevicePointer(win.win, 0, nullptr), "ncclGetLsaMultimemDevicePointer",
                        "outPtr");
  expectInvalidArgument(ncclGetMultimemDevicePointer(nullptr, 0, mc, &out), "ncclGetMultimemDevicePointer", "window");
  expectInvalidArgument(ncclGetMultimemDevicePointer(win.win, 0, mc, nullptr), "ncclGetMultimemDevicePointer",
                        "outPtr");
  expectInvalidArgument(ncclGetMultimemDevicePointer(win.win, 0, ncclMultimemHandle{nullptr}, &out),
                        "ncclGetMultimemDevicePointer", "mcBasePtr");
  expectInvalidArgument(ncclGetLsaDevicePointer(nullptr, 0, 0, &out), "ncclGetLsaDevicePointer", "window");
  expectInvalidArgument(ncclGetLsaDevicePointer(win.win, 0, 0, nullptr), "ncclGetLsaDevicePointer", "outPtr");
  expectInvalidArgument(ncclGetLsaDevicePointer(win.win, 0, -1, &out), "ncclGetLsaDevicePointer", "lsaRank");
  expectInvalidArgument(ncclGetPeerDevicePointer(nullptr, 0, 0, &out), "ncclGetPeerDevicePointer", "window");
  expectInvalidArgument(ncclGetPeerDevicePointer(win.win, 0, 0, nullptr), "ncclGetPeerDevicePointer", "outPtr");
  expectInvalidArgument(ncclGetPeerDevicePointer(win.win, 0, -2, &out), "ncclGetPeerDevicePointer", "peer");
  expectInvalidArgument(ncclGetMultimemDeviceLeInfo(nullptr, 0, &le, &leOffset), "ncclGetMultimemDeviceLeInfo",
                        "window");
  expectInvalidArgument(ncclGetMultimemDeviceLeInfo(win.win, 0, nullptr, &leOffset), "ncclGetMultimemDeviceLeInfo",
                        "leId");
  expectInvalidArgument(ncclGetMultimemDeviceLeInfo(win.win, 0, &le, nullptr), "ncclGetMultimemDeviceLeInfo",
                        "leOffset");
  for (int peerCft : {-1, 2})
    expectInvalidArgument(ncclGetCftDeviceLeInfo(win.win, 0, peerCft, ncclTeam{2, 0, 1}, &le, &leOffset),
                          "ncclGetCftDeviceLeInfo", "peerCft");
  expectInvalidArgument(ncclGetCftDeviceLeInfo(win.win, 0, 0, ncclTeam{2, 0, 1}, &le, nullptr),
                        "ncclGetCftDeviceLeInfo", "leOffset");
  expectInvalidArgument(ncclGetPeerDeviceLeInfo(win.win, 0, -1, &le, &leOffset), "ncclGetPeerDeviceLeInfo",
                        "peerWorld");
  expectInvalidArgument(ncclGetPeerDeviceLeInfo(nullptr, 0, 0, &le, &leOffset), "ncclGetPeerDeviceLeInfo", "window");
}

// ---- GIN scratch requirements -------------------------------------------------------------------

TEST(GpuOnly, GinScratchRequirementsAreRefused) {
  // The handles and requirement structs are opaque to the caller here; any storage will do,
  // since a refused call must not write to them.
  alignas(64) unsigned char handle[256], req[256];
  std::memset(handle, 0x5a, sizeof(handle));
  std::memset(req, 0x5a, sizeof(req));
  auto* h = reinterpret_cast<ncclGinOutboxHandle*>(handle);
  auto* a2a = reinterpret_cast<ncclGinInboxA2AHandle*>(handle);
  auto* r = reinterpret_cast<ncclDevResourceRequirements*>(req);
  expectRefused(ncclGinOutboxCreateRequirement(4, 16, h, r), "ncclGinOutboxCreateRequirement", "GIN");
  expectRefused(ncclGinInboxA2ACreateRequirement(ncclTeam{3, 1, 1}, 2, 12, a2a, r), "ncclGinInboxA2ACreateRequirement",
                "GIN");
  for (unsigned char b : handle) ASSERT_EQ(b, 0x5a);
  for (unsigned char b : req) ASSERT_EQ(b, 0x5a);

  expectInvalidArgument(ncclGinOutboxCreateRequirement(0, 16, h, r), "ncclGinOutboxCreateRequirement", "nBlocks");
  expectInvalidArgument(ncclGinOutboxCreateRequirement(1, -1, h, r), "ncclGinOutboxCreateRequirement", "size_log2");
  expectInvalidArgument(ncclGinOutboxCreateRequirement(1, 64, h, r), "ncclGinOutboxCreateRequirement", "size_log2");
  expectInvalidArgument(ncclGinOutboxCreateRequirement(1, 8, nullptr, r), "ncclGinOutboxCreateRequirement",
                        "outHandle");
  expectInvalidArgument(ncclGinOutboxCreateRequirement(1, 8, h, nullptr), "ncclGinOutboxCreateRequirement", "outReq");
  expectInvalidArgument(ncclGinInboxA2ACreateRequirement(ncclTeam{0, 0, 1}, 1, 8, a2a, r),
                        "ncclGinInboxA2ACreateRequirement", "peers");
  expectInvalidArgument(ncclGinInboxA2ACreateRequirement(ncclTeam{2, 2, 1}, 1, 8, a2a, r),
                        "ncclGinInboxA2ACreateRequirement", "peers");
  expectInvalidArgument(ncclGinInboxA2ACreateRequirement(ncclTeam{2, 0, 1}, -5, 8, a2a, r),
                        "ncclGinInboxA2ACreateRequirement", "nBlocks");
}

// ---- ncclSetEncryption --------------------------------------------------------------------------

TEST(Encryption, PskCommunicatorsWorkAndPlaintextReturns) {
  ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  EXPECT_EQ(ncclSetEncryption(&config), ncclSuccess) << ncclGetLastError(nullptr);
  config.mode = NCCL_ENCRYPTION_MODE_PSK;
  char key[] = "0123456789abcdef0123456789abcdef";
  config.psk = key;
  ASSERT_EQ(ncclSetEncryption(&config), ncclSuccess) << ncclGetLastError(nullptr);
  std::memset(key, 'x', sizeof(key) - 1);  // the library keeps its own copy
  {
    LocalComms comms(2);  // their bootstrap runs TLS
    int count = 0;
    EXPECT_EQ(ncclCommCount(comms[1], &count), ncclSuccess);
    EXPECT_EQ(count, 2);
  }
  config.mode = NCCL_ENCRYPTION_MODE_NONE;
  EXPECT_EQ(ncclSetEncryption(&config), ncclSuccess) << ncclGetLastError(nullptr);
  LocalComms comms(2);
  int count = 0;
  EXPECT_EQ(ncclCommCount(comms[1], &count), ncclSuccess);
  EXPECT_EQ(count, 2);
}

TEST(Encryption, BadConfigsAreInvalidArguments) {
  expectInvalidArgument(ncclSetEncryption(nullptr), "ncclSetEncryption", "NULL");
  ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.magic = 0x12345678;
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "magic");
  config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.mode = 2;
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "mode 2");
  config.mode = -1;
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "mode -1");
  config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.version = 22809;
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "version");
  config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.size = 16;
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "size");
  config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.mode = NCCL_ENCRYPTION_MODE_PSK;
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "psk");
  config.psk = "0123456789abcdef0123456789abcde";  // 31 bytes: one short
  expectInvalidArgument(ncclSetEncryption(&config), "ncclSetEncryption", "31 bytes");
}

}  // namespace
}  // namespace accl::abi
