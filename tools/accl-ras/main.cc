// accl-ras: asks the RAS status server of a local accl process (src/ras/ras_server.h) what its
// communicators are doing and prints the answer: communicators, the process's ranks, each rank's
// current operation and sequence number, the peers it waits for, and the ranks known dead or
// unreachable. accl's counterpart of NCCL's `ncclras`.
//
//   accl-ras                     the process on NCCL_RAS_ADDR (default localhost:28028)
//   accl-ras -p 28029            another port (each process of a host takes the next free one)
//   accl-ras --scan 8            every process listening on the 8 ports from the base port
//   accl-ras -t 2                give up on a process after 2 s (default 5)
//   accl-ras --version           the server's protocol and library version
//
// Encryption: with ACCL_ENCRYPTION_PSK_FILE set (the job's key, as the ranks read it) the query runs
// TLS 1.3 with that key (util/socket.h and util/tls_session.h, from the library's static archive;
// libssl.so.3 is loaded then). A process that encrypts answers a client in clear only from its own
// host's loopback (docs/encryption.md).
//
// Exit status: 0 when at least one process answered, 1 when none did, 2 on a usage error.
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/cli.h"
#include "nccl.h"
#include "util/socket.h"

namespace {

constexpr const char* kTool = "accl-ras";

struct Options {
  std::string host = "localhost";
  int port = 28028;
  int scan = 0;          // 0: just `port`
  double timeoutS = 5.0;
  std::string request = "STATUS";
};

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void usage(FILE* out) {
  fprintf(out,
          "usage: accl-ras [-H host] [-p port] [-a host:port] [--scan N] [-t seconds] [--version]\n"
          "Prints what a local accl process's communicators are doing (its RAS status server).\n"
          "  -H, --host HOST     server host (default: NCCL_RAS_ADDR's, else localhost)\n"
          "  -p, --port PORT     server port (default: NCCL_RAS_ADDR's, else 28028)\n"
          "  -a, --addr H:P      both at once, like NCCL_RAS_ADDR\n"
          "  --scan N            query the N ports from PORT and print every process that answers\n"
          "  -t, --timeout S     seconds to wait for one process (default 5)\n"
          "  --version           print the server's protocol and library version\n"
          "Environment: ACCL_ENCRYPTION_PSK_FILE=<file> queries with TLS and the job's key (needed\n"
          "for a process that encrypts, unless it is queried through this host's loopback).\n"
          "Exit status: 0 at least one process answered, 1 none did, 2 bad usage.\n");
}

bool parseAddr(const std::string& text, Options* o) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return false;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p <= 0 || p > 65535) return false;
  if (!host.empty()) o->host = host;
  o->port = static_cast<int>(p);
  return true;
}

// Connects to host:port within the deadline; -1 with *why on failure.
int connectTo(const std::string& host, int port, int64_t deadlineMs, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string portText = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), portText.c_str(), &hints, &res);
  if (rc != 0) {
    *why = std::string("cannot resolve ") + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int64_t left = deadlineMs - nowMs();
      int err = 0;
      socklen_t len = sizeof(err);
      if (left > 0 && poll(&p, 1, static_cast<int>(left)) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
          err == 0)
        break;
      *why = err ? strerror(err) : "timed out";
    } else {
      *why = strerror(errno);
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

bool encryptionAsked() {
  const char* file = getenv("ACCL_ENCRYPTION_PSK_FILE");
  return file && *file;
}

// Sends the request and reads the whole answer (the server closes when done).
bool query(const Options& o, int port, std::string* answer, std::string* why) {
  const int64_t deadline = nowMs() + static_cast<int64_t>(o.timeoutS * 1000);
  int fd = connectTo(o.host, port, deadline, why);
  if (fd < 0) return false;
  accl::Socket conn = accl::Socket::adopt(fd, accl::SocketAddress());
  if (encryptionAsked() && conn.startTls(/*server=*/false, /*quiet=*/true) != ncclSuccess) {
    *why = std::string("cannot start TLS: ") + ncclGetLastError(nullptr);
    return false;
  }
  // Waits for `events` (TLS may need the other way); false at the deadline. In slices: TLS's
  // helper thread may meet a failure (and take the bytes that carried it) while we sleep.
  auto await = [&](short events) {
    while (true) {
      if (conn.readyWithoutFd()) return true;
      pollfd p{conn.fd(), conn.pollEvents(events), 0};
      int64_t left = deadline - nowMs();
      if (left <= 0) return false;
      int n = poll(&p, 1, static_cast<int>(left < 100 ? left : 100));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
  };
  std::string line = o.request + "\n";
  size_t sent = 0;
  bool ok = true;
  while (ok && sent < line.size()) {
    ssize_t n = conn.sendSome(line.data() + sent, line.size() - sent);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!await(POLLOUT)) ok = false;
    } else {
      *why = conn.ioErrorText(n < 0 ? errno : EPIPE);
      ok = false;
    }
  }
  while (ok) {
    if (!await(POLLIN)) {
      *why = "timed out waiting for the answer";
      return false;
    }
    char buf[4096];
    ssize_t n = conn.recvSome(buf, sizeof(buf));
    if (n > 0) {
      answer->append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR && errno != EAGAIN) {
      *why = conn.ioErrorText(errno);
      ok = false;
    }
  }
  // The server's refusals (it encrypts and we do not, or the other way round) are errors.
  if (ok && answer->compare(0, 6, "ERROR ") == 0 && answer->find("encrypt") != std::string::npos) {
    *why = answer->substr(0, answer->find('\n'));
    ok = false;
  }
  if (!ok && why->empty()) *why = "connection failed";
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* env = getenv("NCCL_RAS_ADDR"); env && *env && !parseAddr(env, &o))
    fprintf(stderr, "accl-ras: ignoring NCCL_RAS_ADDR=\"%s\" (want host:port)\n", env);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= argc) exit(accl::cli::usageError(kTool, "%s needs a value", what));
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-H" || a == "--host") {
      o.host = value("--host");
    } else if (a == "-p" || a == "--port") {
      long p = 0;
      std::string why;
      if (!accl::cli::parseInt(value("--port"), 1, 65535, &p, &why))
        return accl::cli::badValue(kTool, a, argv[i], why + " (a TCP port)");
      o.port = static_cast<int>(p);
    } else if (a == "-a" || a == "--addr") {
      if (!parseAddr(value("--addr"), &o))
        return accl::cli::badValue(kTool, a, argv[i], "not host:port with a port in 1..65535");
    } else if (a == "--scan") {
      long n = 0;
      std::string why;
      if (!accl::cli::parseInt(value("--scan"), 1, 4096, &n, &why))
        return accl::cli::badValue(kTool, a, argv[i], why + " (ports to query)");
      o.scan = static_cast<int>(n);
    } else if (a == "-t" || a == "--timeout") {
      std::string why;
      if (!accl::cli::parsePositive(value("--timeout"), 0.0, &o.timeoutS, &why))
        return accl::cli::badValue(kTool, a, argv[i], why + " (seconds)");
    } else if (a == "--version") {
      o.request = "VERSION";
    } else {
      return accl::cli::usageError(kTool, "unknown option '%s'", a.c_str());
    }
  }
  const int first = o.port, count = o.scan > 0 ? o.scan : 1;
  int answered = 0;
  std::string lastWhy;
  for (int port = first; port < first + count && port <= 65535; ++port) {
    std::string answer, why;
    if (!query(o, port, &answer, &why)) {
      lastWhy = why;
      if (o.scan == 0) fprintf(stderr, "accl-ras: no answer from %s:%d: %s\n", o.host.c_str(), port, why.c_str());
      continue;
    }
    if (o.scan > 0) printf("== %s:%d\n", o.host.c_str(), port);
    fputs(answer.c_str(), stdout);
    fflush(stdout);
    ++answered;
  }
  if (answered == 0 && o.scan > 0)
    fprintf(stderr, "accl-ras: no accl process answered on %s ports %d-%d (last: %s)\n", o.host.c_str(), first,
            first + count - 1, lastWhy.c_str());
  return answered > 0 ? accl::cli::kExitOk : accl::cli::kExitRunFailed;
}
