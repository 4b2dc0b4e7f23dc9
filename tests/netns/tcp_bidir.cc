// tcp_bidir: raw TCP throughput between two hosts with both directions busy (what iperf3 --bidir
// measures), for tests/netns/bench_net.sh. Every connection carries data both ways at once: each
// end has a sender thread writing 1 MiB blocks for the given seconds and a receiver thread
// counting what arrives. Each end prints what it received:
//   tcp_bidir server <bind-address> <port> <seconds> [streams]
//   tcp_bidir client <server-address> <port> <seconds> [streams]
//   -> "tcp_bidir <role>: received <bytes> B in <s> s over <n> streams = <GB/s> GB/s (1e9 B/s)"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int connectWithRetry(const sockaddr_in& a, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (const sockaddr*)&a, sizeof(a)) == 0) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s server|client <address> <port> <seconds> [streams]\n", argv[0]);
    return 2;
  }
  const std::string role = argv[1];
  const double seconds = std::atof(argv[4]);
  const int streams = argc > 5 ? std::atoi(argv[5]) : 1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)std::atoi(argv[3]));
  if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1 || streams < 1 || seconds <= 0) {
    std::fprintf(stderr, "tcp_bidir: bad address, streams or seconds\n");
    return 2;
  }
  std::vector<int> fds;
  if (role == "server") {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(l, (sockaddr*)&a, sizeof(a)) != 0 || listen(l, streams) != 0) {
      std::perror("tcp_bidir: listen");
      return 1;
    }
    for (int i = 0; i < streams; ++i) fds.push_back(accept(l, nullptr, nullptr));
    close(l);
  } else {
    for (int i = 0; i < streams; ++i) fds.push_back(connectWithRetry(a, 20));
  }
  for (int fd : fds)
    if (fd < 0) {
      std::fprintf(stderr, "tcp_bidir %s: connection failed\n", role.c_str());
      return 1;
    }
  std::atomic<long long> received{0};
  std::atomic<double> lastNs{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int fd : fds) {
    threads.emplace_back([fd, seconds, start] {
      std::vector<char> buf(1 << 20, 'x');
      const auto until = start + std::chrono::duration<double>(seconds);
      while (Clock::now() < until)
        if (send(fd, buf.data(), buf.size(), MSG_NOSIGNAL) <= 0) break;
      shutdown(fd, SHUT_WR);
    });
    threads.emplace_back([fd, start, &received, &lastNs] {
      std::vector<char> buf(1 << 20);
      for (;;) {
        ssize_t n = recv(fd, buf.data(), buf.size(), 0);
        if (n <= 0) break;
        received += n;
        lastNs = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int fd : fds) close(fd);
  const double s = lastNs.load() / 1e9;
  std::printf("tcp_bidir %s: received %lld B in %.3f s over %d streams = %.3f GB/s (1e9 B/s)\n", role.c_str(),
              received.load(), s, streams, s > 0 ? received.load() / s / 1e9 : 0.0);
  return 0;
}
