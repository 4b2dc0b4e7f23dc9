// The RAS status server thread (see ras_server.h).
#include "ras/ras_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "activity/ras_comms.h"
#include "activity/ras_waits.h"
#include "nccl.h"
#include "ras/ras_report.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket.h"
#include "util/tls_config.h"
#include "util/str_format.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr size_t kMaxRequestBytes = 256;
constexpr unsigned char kTlsHandshakeRecord = 0x16;  // the first byte of every TLS ClientHello

// What an encrypting process tells a client that reaches it in clear from another host.
constexpr char kEncryptionRequired[] =
    "ERROR encryption required: this process encrypts its connections (ncclSetEncryption / "
    "ACCL_ENCRYPTION_PSK_FILE); run accl-ras with ACCL_ENCRYPTION_PSK_FILE naming the job's key\n";
constexpr char kEncryptionOff[] =
    "ERROR this process does not encrypt: run accl-ras without ACCL_ENCRYPTION_PSK_FILE\n";

struct Server {
  std::mutex mutex;  // start/stop
  bool running = false;
  std::thread* thread = nullptr;  // owned while running; left alone in a forked child
  int listenFd = -1;
  int wakeRead = -1, wakeWrite = -1;
  int port = 0;
  int64_t clientTimeoutMs = 1000;
};

// Never destroyed: the thread may outlive static destruction when the process exits with
// communicators still open.
Server& server() {
  static Server* s = new Server;
  return *s;
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Splits "host:port" / "[v6]:port" / ":port" / "port"; false when the port is missing or bad.
bool splitHostPort(const std::string& text, std::string* host, int* port) {
  std::string portText;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return false;
    *host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      *host = "localhost";
      portText = text;
    } else {
      *host = colon == 0 ? std::string("localhost") : text.substr(0, colon);
      portText = text.substr(colon + 1);
    }
  }
  char* end = nullptr;
  long p = std::strtol(portText.c_str(), &end, 10);
  if (portText.empty() || *end != '\0' || p < 0 || p > 65535) return false;
  *port = static_cast<int>(p);
  return true;
}

// Binds a listening socket on host:port, trying `tries` consecutive ports. Returns the fd (and the
// port) or -1 with *why set.
int listenOnFirstFree(const std::string& host, int port, int tries, int* boundPort, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    *why = strFormat("cannot resolve host \"%s\": %s", host.c_str(), gai_strerror(rc));
    return -1;
  }
  sockaddr_storage addr{};
  socklen_t len = res->ai_addrlen;
  std::memcpy(&addr, res->ai_addr, len);
  freeaddrinfo(res);
  *why = "no port tried";
  for (int i = 0; i < tries && port + i <= 65535; ++i) {
    const int p = port + i;
    if (addr.ss_family == AF_INET6)
      reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(static_cast<uint16_t>(p));
    else
      reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(static_cast<uint16_t>(p));
    int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *why = strFormat("socket: %s", strerror(errno));
      return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 && ::listen(fd, 16) == 0) {
      sockaddr_storage bound{};
      socklen_t blen = sizeof(bound);
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
      *boundPort = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      return fd;
    }
    *why = strFormat("port %d: %s", p, strerror(errno));
    ::close(fd);
    if (port == 0) break;  // an ephemeral port cannot be "taken"
  }
  return -1;
}

// Waits until fd has `events` or the deadline passes or the server is told to stop.
bool waitFd(int fd, short events, int wakeFd, int64_t deadlineNs) {
  while (true) {
    int64_t leftMs = (deadlineNs - nowNs()) / 1000000;
    if (leftMs <= 0) return false;
    pollfd fds[2] = {{fd, events, 0}, {wakeFd, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(leftMs > 100 ? 100 : leftMs));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    if (fds[1].revents) return false;
    if (fds[0].revents) return true;
  }
}

std::string answer(std::string request) {
  while (!request.empty() && (request.back() == '\n' || request.back() == '\r' || request.back() == ' '))
    request.pop_back();
  size_t start = request.find_first_not_of(' ');
  request = start == std::string::npos ? "" : request.substr(start);
  for (char& ch : request) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
  if (request == "STATUS" || request.empty()) return rasReportText();
  if (request == "VERSION")
    return strFormat("accl-ras protocol 1 library %d.%d.%d\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  return "ERROR unknown request \"" + request + "\" (send STATUS or VERSION)\n";
}

// Sends a short notice in clear (best effort) and ends our side. What the client sent is read
// first: closing with unread bytes would reset the connection and lose the notice.
void refuse(int fd, const char* notice) {
  char sink[kMaxRequestBytes];
  while (::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
  }
  (void)!::send(fd, notice, strlen(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)::shutdown(fd, SHUT_WR);
}

// Encryption: a client that opens with a TLS record gets TLS with the process's key. A client in
// clear is served only from this host's loopback (its bytes never leave the kernel, and whoever
// could read them there can read this process's memory too); one from another host is told that
// the process encrypts. Returns false when the connection is refused (or TLS cannot start).
bool startClientSession(Socket& conn, int wakeFd, int64_t deadline) {
  std::shared_ptr<const TlsContext> tls;
  if (currentTls(&tls) != ncclSuccess) tls.reset();
  if (!waitFd(conn.fd(), POLLIN, wakeFd, deadline)) return true;  // the request loop reports it
  unsigned char first = 0;
  const bool hello = ::recv(conn.fd(), &first, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && first == kTlsHandshakeRecord;
  if (hello && !tls) {
    refuse(conn.fd(), kEncryptionOff);
    ACCL_INFO(ACCL_LOG_RAS, "RAS: refused a TLS client from %s: this process does not encrypt",
              conn.peerAddress().toString().c_str());
    return false;
  }
  if (hello) return conn.startTls(/*server=*/true, /*quiet=*/true) == ncclSuccess;
  if (tls && !conn.peerAddress().isLoopback()) {
    refuse(conn.fd(), kEncryptionRequired);
    ACCL_INFO(ACCL_LOG_RAS, "RAS: refused a client in clear from %s: this process encrypts",
              conn.peerAddress().toString().c_str());
    return false;
  }
  return true;
}

// One client: read its line, answer, close; all within the client deadline.
void serveClient(Socket& conn, int wakeFd, int64_t timeoutMs) {
  const int64_t deadline = nowNs() + timeoutMs * 1000000;
  if (!startClientSession(conn, wakeFd, deadline)) return;
  std::string request;
  bool complete = false;
  while (!complete && request.size() < kMaxRequestBytes) {
    if (!conn.readyWithoutFd() && !waitFd(conn.fd(), conn.pollEvents(POLLIN), wakeFd, deadline)) {
      ACCL_INFO(ACCL_LOG_RAS, "RAS: a client sent no request within %lld ms; closing it",
                static_cast<long long>(timeoutMs));
      return;
    }
    char buf[kMaxRequestBytes];
    ssize_t n = conn.recvSome(buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0 && conn.encrypted()) {
      ACCL_INFO(ACCL_LOG_RAS, "RAS: a TLS client from %s failed: %s", conn.peerAddress().toString().c_str(),
                conn.ioErrorText(errno).c_str());
      return;
    }
    if (n <= 0) {
      complete = true;  // the client closed its side: take what it sent
      break;
    }
    request.append(buf, static_cast<size_t>(n));
    complete = request.find('\n') != std::string::npos;
  }
  request = request.substr(0, request.find('\n'));
  std::string reply = answer(request);
  size_t sent = 0;
  while (sent < reply.size()) {
    if (!waitFd(conn.fd(), conn.pollEvents(POLLOUT), wakeFd, deadline)) {
      ACCL_INFO(ACCL_LOG_RAS, "RAS: a client did not take its answer within %lld ms; cut off after %zu of %zu bytes",
                static_cast<long long>(timeoutMs), sent, reply.size());
      return;
    }
    ssize_t n = conn.sendSome(reply.data() + sent, reply.size() - sent);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
  // TLS: the answer may still wait in the session (behind the handshake); let it out before the close.
  while (conn.tlsBusy() && nowNs() < deadline) ::poll(nullptr, 0, 5);
}

void serverLoop(int listenFd, int wakeFd, int64_t clientTimeoutMs) {
  while (true) {
    pollfd fds[2] = {{listenFd, POLLIN, 0}, {wakeFd, POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents) return;
    if (!fds[0].revents) continue;
    SocketAddress peer;
    socklen_t len = sizeof(peer);
    int fd = ::accept4(listenFd, &peer.sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    Socket conn = Socket::adopt(fd, peer);
    serveClient(conn, wakeFd, clientTimeoutMs);
  }
}

void startLocked(Server& s) {
  if (paramInt("NCCL_RAS_ENABLE") == 0) return;
  const std::string addr = paramStr("NCCL_RAS_ADDR");
  std::string host;
  int port = 0;
  if (!splitHostPort(addr, &host, &port)) {
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_RAS, "RAS: NCCL_RAS_ADDR \"%s\" is not host:port; no status server",
              addr.c_str());
    return;
  }
  int64_t tries = paramInt("ACCL_RAS_PORT_RANGE");
  std::string why;
  int bound = 0;
  int fd = listenOnFirstFree(host, port, static_cast<int>(tries < 1 ? 1 : tries), &bound, &why);
  if (fd < 0) {
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_RAS,
              "RAS: no status server: could not listen on %s or the next %lld ports (last: %s)", addr.c_str(),
              static_cast<long long>(tries - 1), why.c_str());
    return;
  }
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_RAS, "RAS: no status server: pipe: %s", strerror(errno));
    return;
  }
  s.listenFd = fd;
  s.wakeRead = pipeFds[0];
  s.wakeWrite = pipeFds[1];
  s.port = bound;
  s.clientTimeoutMs = paramInt("ACCL_RAS_CLIENT_TIMEOUT_MS");
  if (s.clientTimeoutMs <= 0) s.clientTimeoutMs = 1000;
  s.thread = new std::thread(serverLoop, s.listenFd, s.wakeRead, s.clientTimeoutMs);
  s.running = true;
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_RAS, "RAS: status server of pid %d listening on %s:%d%s (query: accl-ras -p %d)",
            static_cast<int>(getpid()), host.c_str(), bound, bound != port ? " (the configured port was taken)" : "",
            bound);
}

void stopLocked(Server& s) {
  if (!s.running) return;
  const char stop = 1;
  ssize_t ignored = ::write(s.wakeWrite, &stop, 1);
  (void)ignored;
  s.thread->join();
  delete s.thread;
  s.thread = nullptr;
  closeFd(s.listenFd);
  closeFd(s.wakeRead);
  closeFd(s.wakeWrite);
  s.port = 0;
  s.running = false;
}

void forkPrepare() {
  server().mutex.lock();
  rasCommsLockForFork();
  rasWaitsLockForFork();
}

void forkParent() {
  rasWaitsUnlockAfterFork(false);
  rasCommsUnlockAfterFork(false);
  server().mutex.unlock();
}

void forkChild() {
  Server& s = server();
  // The server thread does not exist here; its std::thread object is abandoned, not joined.
  s.thread = nullptr;
  s.running = false;
  s.port = 0;
  closeFd(s.listenFd);
  closeFd(s.wakeRead);
  closeFd(s.wakeWrite);
  rasWaitsUnlockAfterFork(true);
  rasCommsUnlockAfterFork(true);
  s.mutex.unlock();
}

}  // namespace

void rasServerSync() {
  static std::once_flag atfork;
  std::call_once(atfork, [] { pthread_atfork(forkPrepare, forkParent, forkChild); });
  Server& s = server();
  std::lock_guard<std::mutex> lock(s.mutex);
  const bool wanted = rasCommCount() > 0;
  if (wanted && !s.running) startLocked(s);
  if (!wanted && s.running) stopLocked(s);
}

void rasServerFollowComms() { rasSetCommsChangedListener(rasServerSync); }

int rasServerPort() {
  Server& s = server();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.running ? s.port : 0;
}

}  // namespace accl
