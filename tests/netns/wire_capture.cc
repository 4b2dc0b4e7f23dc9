// wire_capture: counts a byte string in every frame of every interface of the network namespace it
// runs in (an AF_PACKET raw socket, ETH_P_ALL), for net_matrix.sh -C, which runs it in multihost.sh's
// switch namespace (every frame between namespace hosts crosses its veth ends).
//
//   wire_capture MARKER READY-FILE RESULT-FILE
// Creates READY-FILE once the socket is open and captures until SIGTERM/SIGINT, keeping
// "frames=<n> bytes=<n> hits=<n>" in RESULT-FILE up to date (replaced after every batch of frames:
// multihost.sh's teardown SIGKILLs whatever runs in its namespaces). Exit status 0, or 1 when the
// socket cannot be made.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {
volatile sig_atomic_t gStop = 0;
void onSignal(int) { gStop = 1; }

void writeResult(const std::string& path, unsigned long long frames, unsigned long long bytes,
                 unsigned long long hits) {
  const std::string tmp = path + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "w");
  if (!out) return;
  std::fprintf(out, "frames=%llu bytes=%llu hits=%llu\n", frames, bytes, hits);
  std::fclose(out);
  std::rename(tmp.c_str(), path.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MARKER READY-FILE RESULT-FILE\n", argv[0]);
    return 2;
  }
  const std::string marker = argv[1];
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) {
    std::perror("wire_capture: socket(AF_PACKET)");
    return 1;
  }
  int big = 64 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  if (FILE* f = std::fopen(argv[2], "w")) std::fclose(f);
  std::vector<char> frame(1 << 17);
  unsigned long long frames = 0, bytes = 0, hits = 0;
  writeResult(argv[3], frames, bytes, hits);
  while (!gStop) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    while (true) {
      ssize_t n = recv(fd, frame.data(), frame.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      ++frames;
      bytes += static_cast<unsigned long long>(n);
      const char* at = frame.data();
      const char* end = frame.data() + n;
      while (at < end) {
        const void* hit = memmem(at, static_cast<size_t>(end - at), marker.data(), marker.size());
        if (!hit) break;
        ++hits;
        at = static_cast<const char*>(hit) + marker.size();
      }
    }
    writeResult(argv[3], frames, bytes, hits);
  }
  writeResult(argv[3], frames, bytes, hits);
  return 0;
}
