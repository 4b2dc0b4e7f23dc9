// Helpers for the net plugin and registry tests: opening a plugin library as a NetDevice,
// connecting a send/receive pair on one NetDevice and moving checked bytes through it in one
// thread (both ends polled in turn, under a deadline so a stuck device fails the test instead of
// hanging it), and capturing log lines.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/scoped_env.h"
#include "transports/net/net_device.h"
#include "transports/net/plugin/plugin_library.h"
#include "transports/net/plugin/plugin_net_device.h"
#include "util/last_error.h"
#include "util/log.h"

namespace accl::test {

constexpr auto kNetDeadline = std::chrono::seconds(60);

inline std::string pluginPath(const std::string& libName) { return std::string(ACCL_NET_PLUGIN_DIR) + "/" + libName; }

// A NetDevice over the plugin library `entry` (a name or a path) for communicator `commId`; null
// when the library cannot be loaded or initialized.
inline std::unique_ptr<netplugin::PluginNetDevice> openDevice(const std::string& entry, uint64_t commId = 0x1234) {
  std::shared_ptr<netplugin::PluginLibrary> library = netplugin::PluginLibrary::load(entry);
  if (!library) return nullptr;
  std::unique_ptr<netplugin::PluginNetDevice> device;
  if (netplugin::PluginNetDevice::create(library, commId, -1, &device) != ncclSuccess) return nullptr;
  return device;
}

// A connected pair on device 0 of `dev`, closed (all three comms) on destruction.
struct NetPair {
  NetDevice* dev = nullptr;
  NetListenComm* listen = nullptr;
  NetSendComm* send = nullptr;
  NetRecvComm* recv = nullptr;
  ~NetPair() {
    if (!dev) return;
    if (send) dev->closeSend(send);
    if (recv) dev->closeRecv(recv);
    if (listen) dev->closeListen(listen);
  }
};

inline ::testing::AssertionResult connectPair(NetDevice& dev, NetPair* pair) {
  pair->dev = &dev;
  NetHandle handle;
  if (ncclResult_t r = dev.listen(0, &handle, &pair->listen); r != ncclSuccess)
    return ::testing::AssertionFailure() << "listen: " << ncclGetErrorString(r);
  auto deadline = std::chrono::steady_clock::now() + kNetDeadline;
  NetCommConfig config;
  while (!pair->send || !pair->recv) {
    if (!pair->send)
      if (ncclResult_t r = dev.connect(0, config, handle, &pair->send); r != ncclSuccess)
        return ::testing::AssertionFailure() << "connect: " << ncclGetErrorString(r);
    if (!pair->recv)
      if (ncclResult_t r = dev.accept(pair->listen, &pair->recv); r != ncclSuccess)
        return ::testing::AssertionFailure() << "accept: " << ncclGetErrorString(r);
    if (std::chrono::steady_clock::now() > deadline) return ::testing::AssertionFailure() << "connect timed out";
  }
  return ::testing::AssertionSuccess();
}

inline unsigned char patternByte(size_t i, int seed) { return static_cast<unsigned char>(i * 131 + seed * 7 + 1); }

// Sends `size` bytes with `tag` into a receive of `room` bytes, both registered; checks the
// bytes, the reported sizes, and that nothing past `size` was written.
inline ::testing::AssertionResult transfer(NetPair& p, size_t size, size_t room, int tag) {
  NetDevice& dev = *p.dev;
  std::vector<unsigned char> src(size), dst(room + 1, 0xEE);
  for (size_t i = 0; i < size; ++i) src[i] = patternByte(i, tag);
  NetMemHandle *smh = nullptr, *rmh = nullptr;
  if (ncclResult_t r = dev.regMr(static_cast<NetSendComm*>(p.send), src.data(), size, kNetPtrHost, &smh);
      r != ncclSuccess)
    return ::testing::AssertionFailure() << "regMr(send): " << ncclGetErrorString(r);
  if (ncclResult_t r = dev.regMr(static_cast<NetRecvComm*>(p.recv), dst.data(), room, kNetPtrHost, &rmh);
      r != ncclSuccess)
    return ::testing::AssertionFailure() << "regMr(recv): " << ncclGetErrorString(r);
  NetRequest *sreq = nullptr, *rreq = nullptr;
  bool sdone = false, rdone = false;
  size_t sentSize = 0, gotSize = 0;
  auto deadline = std::chrono::steady_clock::now() + kNetDeadline;
  while (!sdone || !rdone) {
    if (std::chrono::steady_clock::now() > deadline)
      return ::testing::AssertionFailure() << "transfer of " << size << " bytes timed out";
    void* rbuf = dst.data();
    size_t rsize = room;
    if (!rreq && !rdone)
      if (ncclResult_t r = dev.irecv(p.recv, 1, &rbuf, &rsize, &tag, &rmh, &rreq); r != ncclSuccess)
        return ::testing::AssertionFailure() << "irecv: " << ncclGetErrorString(r);
    if (!sreq && !sdone)
      if (ncclResult_t r = dev.isend(p.send, src.data(), size, tag, smh, &sreq); r != ncclSuccess)
        return ::testing::AssertionFailure() << "isend: " << ncclGetErrorString(r);
    int done = 0;
    if (sreq) {
      if (ncclResult_t r = dev.test(sreq, &done, &sentSize); r != ncclSuccess)
        return ::testing::AssertionFailure() << "test(send): " << ncclGetErrorString(r);
      if (done) sdone = true, sreq = nullptr;
    }
    if (rreq) {
      if (ncclResult_t r = dev.test(rreq, &done, &gotSize); r != ncclSuccess)
        return ::testing::AssertionFailure() << "test(recv): " << ncclGetErrorString(r);
      if (done) rdone = true, rreq = nullptr;
    }
  }
  dev.deregMr(static_cast<NetSendComm*>(p.send), smh);
  dev.deregMr(static_cast<NetRecvComm*>(p.recv), rmh);
  if (sentSize != size) return ::testing::AssertionFailure() << "send reported " << sentSize << " bytes, not " << size;
  if (gotSize != size) return ::testing::AssertionFailure() << "receive reported " << gotSize << " bytes, not " << size;
  for (size_t i = 0; i < size; ++i)
    if (dst[i] != src[i])
      return ::testing::AssertionFailure()
             << "byte " << i << " of " << size << " is " << int(dst[i]) << ", not " << int(src[i]);
  for (size_t i = size; i <= room; ++i)
    if (dst[i] != 0xEE) return ::testing::AssertionFailure() << "byte " << i << " past the message was written";
  return ::testing::AssertionSuccess();
}

// Sends INFO lines of INIT/NET/ENV to a file for the scope; text() reads what was logged.
class LogCapture {
 public:
  LogCapture()
      : path_(makePath()),
        level_("NCCL_DEBUG", "INFO"),
        subsys_("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV"),
        file_("NCCL_DEBUG_FILE", path_.c_str()) {
    resetLogSettings();
    setLastError("");
  }
  ~LogCapture() {
    resetLogSettings();
    unlink(path_.c_str());
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  }

 private:
  static std::string makePath() {
    char name[] = "/tmp/accl-net-plugin-log-XXXXXX";
    int fd = mkstemp(name);
    if (fd >= 0) close(fd);
    return name;
  }
  std::string path_;
  ScopedEnvVar level_, subsys_, file_;
};

}  // namespace accl::test
