// accl-net-socket-bench: throughput of the Socket NetDevice on loopback against one raw TCP stream,
// for 64 MiB messages (not run by ctest). One thread drives the sending comm, another the
// receiving comm, as two proxies would.
// Usage: accl-net-socket-bench [iterations] [MiB] [rounds]. Prints GB/s (1e9 bytes per second) for
// the raw stream and for threads x sockets 0x0, 1x1, 2x2: the best and the median round.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transports/net/socket/socket_net.h"
#include "util/socket.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr size_t kDepth = 4;

bool waitDone(NetDevice* dev, NetRequest* r) {
  // Yield between tests, as a proxy thread sharing the CPUs would: on a small machine a pure spin
  // takes the cores the helper threads need.
  int done = 0;
  while (!done) {
    if (dev->test(r, &done, nullptr) != ncclSuccess) return false;
    if (!done) std::this_thread::yield();
  }
  return true;
}

double rawTcp(size_t bytes, int iters) {
  SocketAddress any;
  if (SocketAddress::parse("127.0.0.1:0", &any) != ncclSuccess) return -1;
  Socket listener, tx, rx;
  if (Socket::listen(any, &listener) != ncclSuccess) return -1;
  SocketWait wait = SocketWait::in(30000, nullptr, "bench");
  std::thread accepter([&] { (void)listener.accept(42, SocketType::kNetSocket, wait, &rx); });
  if (Socket::connect(listener.localAddress(), 42, SocketType::kNetSocket, wait, &tx) != ncclSuccess) return -1;
  accepter.join();
  std::vector<char> src(bytes, 1), dst(bytes);
  bool ok = true;
  int64_t t0 = nowNs();
  std::thread sender([&] {
    for (int i = 0; i < iters; ++i) ok &= tx.sendAll(src.data(), bytes, wait) == ncclSuccess;
  });
  for (int i = 0; i < iters; ++i) ok &= rx.recvAll(dst.data(), bytes, wait) == ncclSuccess;
  sender.join();
  double s = (nowNs() - t0) / 1e9;
  return ok ? bytes * double(iters) / s / 1e9 : -1;
}

double device(const char* threads, const char* socks, size_t bytes, int iters) {
  setenv("NCCL_SOCKET_NTHREADS", threads, 1);
  setenv("NCCL_NSOCKS_PERTHREAD", socks, 1);
  std::unique_ptr<NetDevice> dev;
  if (createSocketNetDevice(&dev) != ncclSuccess) return -1;
  NetHandle handle;
  NetListenComm* lc = nullptr;
  NetSendComm* sc = nullptr;
  NetRecvComm* rc = nullptr;
  if (dev->listen(0, &handle, &lc) != ncclSuccess) return -1;
  Deadline deadline(30000);
  while ((!sc || !rc) && !deadline.expired()) {
    if (!sc && dev->connect(0, NetCommConfig{}, handle, &sc) != ncclSuccess) return -1;
    if (!rc && dev->accept(lc, &rc) != ncclSuccess) return -1;
  }
  if (!sc || !rc) return -1;
  std::vector<char> src(bytes, 1), dst(bytes);
  bool ok = true;
  int64_t t0 = nowNs();
  // Each side keeps kDepth messages in flight, as a proxy with several FIFO steps posted does.
  std::thread sender([&] {
    std::deque<NetRequest*> inFlight;
    for (int i = 0; (i < iters || !inFlight.empty()) && ok;) {
      if (i < iters && inFlight.size() < kDepth) {
        NetRequest* r = nullptr;
        ok &= dev->isend(sc, src.data(), bytes, 0, nullptr, &r) == ncclSuccess;
        if (r) {
          inFlight.push_back(r);
          ++i;
          continue;
        }
      }
      if (i == iters || inFlight.size() == kDepth) {
        ok &= waitDone(dev.get(), inFlight.front());
        inFlight.pop_front();
      }
    }
  });
  std::deque<NetRequest*> inFlight;
  for (int i = 0; (i < iters || !inFlight.empty()) && ok;) {
    if (i < iters && inFlight.size() < kDepth) {
      NetRequest* r = nullptr;
      void* d[1] = {dst.data()};
      size_t sz[1] = {bytes};
      int tag[1] = {0};
      ok &= dev->irecv(rc, 1, d, sz, tag, nullptr, &r) == ncclSuccess;
      if (r) {
        inFlight.push_back(r);
        ++i;
        continue;
      }
    }
    if (i == iters || inFlight.size() == kDepth) {
      ok &= waitDone(dev.get(), inFlight.front());
      inFlight.pop_front();
    }
  }
  sender.join();
  double s = (nowNs() - t0) / 1e9;
  dev->closeSend(sc);
  dev->closeRecv(rc);
  dev->closeListen(lc);
  return ok ? bytes * double(iters) / s / 1e9 : -1;
}

}  // namespace
}  // namespace accl

int main(int argc, char** argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 16;
  size_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
  int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  size_t bytes = mib << 20;
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  // Rounds interleave the configurations, so a burst of load elsewhere on the machine hits them alike;
  // the best round approximates an idle machine, the median a busy one.
  const char* names[] = {"raw TCP, one stream", "Socket 0x0 (auto)", "Socket 1x1", "Socket 2x2"};
  std::vector<std::vector<double>> gbps(4);
  for (int r = 0; r < rounds; ++r) {
    gbps[0].push_back(accl::rawTcp(bytes, iters));
    gbps[1].push_back(accl::device("0", "0", bytes, iters));
    gbps[2].push_back(accl::device("1", "1", bytes, iters));
    gbps[3].push_back(accl::device("2", "2", bytes, iters));
  }
  std::printf("# loopback, %zu MiB messages x %d, %d rounds, %u CPUs; GB/s = 1e9 B/s\n", mib, iters, rounds,
              std::thread::hardware_concurrency());
  std::printf("%-24s %8s %8s\n", "", "best", "median");
  for (int c = 0; c < 4; ++c) {
    std::vector<double> v = gbps[c];
    std::sort(v.begin(), v.end());
    std::printf("%-24s %8.2f %8.2f\n", names[c], v.back(), v[v.size() / 2]);
  }
  return 0;
}
