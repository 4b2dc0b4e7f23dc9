// wire_capture: counts byte strings in every frame of every interface of the network namespace it
// runs in (an AF_PACKET raw socket, ETH_P_ALL), for net_matrix.sh -C, which runs it in multihost.sh's
// switch namespace (every frame between namespace hosts crosses its veth ends).
//
//   wire_capture READY-FILE RESULT-FILE NAME=MARKER [NAME=MARKER...]
// MARKER is text, or hex:<bytes> for binary (a liveness frame's head). Creates READY-FILE once the
// socket is open and captures until SIGTERM/SIGINT, keeping RESULT-FILE up to date (replaced after
// every batch of frames: multihost.sh's teardown SIGKILLs whatever runs in its namespaces): a line
// "frames=<n> bytes=<n> hits=<all markers' hits>", then one line "<NAME> hits=<n>" per marker. Exit
// status 0, 1 when the socket cannot be made, 2 on bad usage.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
volatile sig_atomic_t gStop = 0;
void onSignal(int) { gStop = 1; }

struct Marker {
  std::string name;
  std::string bytes;
  unsigned long long hits = 0;
};

// "NAME=text" or "NAME=hex:6c76..."; false when malformed.
bool parseMarker(const std::string& arg, Marker* m) {
  const size_t eq = arg.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == arg.size()) return false;
  m->name = arg.substr(0, eq);
  m->bytes = arg.substr(eq + 1);
  if (m->bytes.rfind("hex:", 0) != 0) return true;
  const std::string hex = m->bytes.substr(4);
  if (hex.empty() || hex.size() % 2) return false;
  m->bytes.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    char* end = nullptr;
    const std::string two = hex.substr(i, 2);
    const long v = std::strtol(two.c_str(), &end, 16);
    if (*end) return false;
    m->bytes.push_back(static_cast<char>(v));
  }
  return true;
}

void writeResult(const std::string& path, unsigned long long frames, unsigned long long bytes,
                 const std::vector<Marker>& markers) {
  const std::string tmp = path + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "w");
  if (!out) return;
  unsigned long long hits = 0;
  for (const Marker& m : markers) hits += m.hits;
  std::fprintf(out, "frames=%llu bytes=%llu hits=%llu\n", frames, bytes, hits);
  for (const Marker& m : markers) std::fprintf(out, "%s hits=%llu\n", m.name.c_str(), m.hits);
  std::fclose(out);
  std::rename(tmp.c_str(), path.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<Marker> markers(argc > 3 ? argc - 3 : 0);
  bool ok = argc >= 4;
  for (int i = 3; i < argc && ok; ++i) ok = parseMarker(argv[i], &markers[i - 3]);
  if (!ok) {
    std::fprintf(stderr, "usage: %s READY-FILE RESULT-FILE NAME=MARKER|NAME=hex:BYTES...\n", argv[0]);
    return 2;
  }
  const char* readyFile = argv[1];
  const char* resultFile = argv[2];
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) {
    std::perror("wire_capture: socket(AF_PACKET)");
    return 1;
  }
  int big = 64 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  if (FILE* f = std::fopen(readyFile, "w")) std::fclose(f);
  std::vector<char> frame(1 << 17);
  unsigned long long frames = 0, bytes = 0;
  writeResult(resultFile, frames, bytes, markers);
  while (!gStop) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    while (true) {
      ssize_t n = recv(fd, frame.data(), frame.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      ++frames;
      bytes += static_cast<unsigned long long>(n);
      for (Marker& m : markers) {
        const char* at = frame.data();
        const char* end = frame.data() + n;
        while (at < end) {
          const void* hit = memmem(at, static_cast<size_t>(end - at), m.bytes.data(), m.bytes.size());
          if (!hit) break;
          ++m.hits;
          at = static_cast<const char*>(hit) + m.bytes.size();
        }
      }
    }
    writeResult(resultFile, frames, bytes, markers);
  }
  writeResult(resultFile, frames, bytes, markers);
  return 0;
}
