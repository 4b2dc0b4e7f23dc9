// Interface selection, sysfs properties and the threads x sockets choice (socket_net_config.h).
#include "transports/net/socket/socket_net_config.h"

#include <climits>
#include <cstdlib>
#include <fstream>

#include "transports/net/socket/socket_net_wire.h"
#include "util/check.h"
#include "util/log.h"
#include "util/net_interfaces.h"
#include "util/params.h"

namespace accl::socketnet {
namespace {

constexpr int kMaxInterfaces = 16;
constexpr int kDefaultSpeedMbps = 10000;
constexpr int kAuto = -2;

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

}  // namespace

std::string netIfPciPath(const std::string& ifname) {
  std::string link = "/sys/class/net/" + ifname + "/device";
  char resolved[PATH_MAX];
  if (realpath(link.c_str(), resolved) == nullptr) return "";
  return resolved;
}

int netIfSpeedMbps(const std::string& ifname) {
  // Loopback and many virtual interfaces have no speed (the read fails or says -1).
  std::string text = readFirstLine("/sys/class/net/" + ifname + "/speed");
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || v <= 0 || v > INT_MAX) return kDefaultSpeedMbps;
  return static_cast<int>(v);
}

ncclResult_t findSocketNetInterfaces(const SocketIfSetting& setting, std::vector<SocketNetIf>* out,
                                     std::string* all) {
  out->clear();
  std::vector<NetInterface> present;
  ACCL_CHECK(listInterfaces(&present));
  if (all) {
    all->clear();
    for (const NetInterface& i : present) *all += (all->empty() ? "" : ", ") + i.name + "=" + i.addr.hostString();
  }
  // As NCCL: the NCCL_COMM_ID subnet is a preference when no list is given.
  SocketAddress commId;
  bool haveCommId = false;
  std::string commIdText = paramStr("NCCL_COMM_ID");
  if (!commIdText.empty())
    haveCommId = SocketAddress::parse(commIdText, &commId, AF_UNSPEC, "NCCL_COMM_ID") == ncclSuccess;
  for (const NetInterface& i : selectInterfaces(present, setting, haveCommId ? &commId : nullptr, kMaxInterfaces)) {
    SocketNetIf s;
    s.name = i.name;
    s.addr = i.addr;
    s.pciPath = netIfPciPath(i.name);
    s.speedMbps = netIfSpeedMbps(i.name);
    out->push_back(s);
  }
  return ncclSuccess;
}

Parallelism chooseParallelism(int nThreads, int nSocksPerThread, const std::string& pciPath) {
  if (nThreads < 0 || nSocksPerThread < 0) {
    // NCCL's automatic choice: no helper threads (the caller's thread moves the data on the
    // control socket), except on the cloud NICs that need several streams to reach line rate.
    int autoThreads = 0, autoSocks = 1;
    std::string vendor = pciPath.empty() ? "" : readFirstLine(pciPath + "/vendor");
    if (vendor == "0x1d0f") {  // AWS ENA
      autoThreads = 2;
      autoSocks = 8;
    } else if (vendor == "0x1ae0") {  // Google gVNIC
      autoThreads = 4;
      autoSocks = 1;
    }
    if (nThreads < 0) nThreads = autoThreads;
    if (nSocksPerThread < 0) nSocksPerThread = autoSocks;
  }
  if (nThreads > kMaxThreads) {
    ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_ENV, "NET/Socket: NCCL_SOCKET_NTHREADS=%d is above the cap; using %d",
              nThreads, kMaxThreads);
    nThreads = kMaxThreads;
  }
  if (nThreads > 0 && nThreads * nSocksPerThread > kMaxDataSockets) {
    int capped = kMaxDataSockets / nThreads;
    ACCL_INFO(ACCL_LOG_NET | ACCL_LOG_ENV,
              "NET/Socket: %d threads x %d sockets is above the cap of %d sockets; using %d per thread", nThreads,
              nSocksPerThread, kMaxDataSockets, capped);
    nSocksPerThread = capped;
  }
  Parallelism p;
  if (nThreads > 0 && nSocksPerThread > 0) {
    p.nThreads = nThreads;
    p.nSocksPerThread = nSocksPerThread;
  }
  return p;
}

Parallelism chooseParallelism(const std::string& pciPath) {
  int64_t t = paramInt("NCCL_SOCKET_NTHREADS"), s = paramInt("NCCL_NSOCKS_PERTHREAD");
  auto clampInt = [](int64_t v) { return static_cast<int>(v < kAuto ? kAuto : (v > 1024 ? 1024 : v)); };
  return chooseParallelism(clampInt(t), clampInt(s), pciPath);
}

size_t minTaskBytes() {
  int64_t v = paramInt("NCCL_SOCKET_MIN_TASKSIZE");
  return static_cast<size_t>(v < 4096 ? 4096 : v);
}

size_t inlineBytes() {
  int64_t v = paramInt("NCCL_SOCKET_INLINE");
  return static_cast<size_t>(v < 0 ? 0 : (v > (1 << 20) ? (1 << 20) : v));
}

}  // namespace accl::socketnet
