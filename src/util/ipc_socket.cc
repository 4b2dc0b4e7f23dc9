// fd passing over abstract unix datagram sockets (see ipc_socket.h).
#include "util/ipc_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <thread>

#include "util/check.h"
#include "util/host_identity.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr int kMaxFdsPerMessage = 4;  // more than one is refused; room to close extras

socklen_t abstractAddress(const IpcAddress& addr, sockaddr_un* out) {
  std::memset(out, 0, sizeof(*out));
  out->sun_family = AF_UNIX;
  const std::string name = ipcSocketName(addr);
  const size_t n = std::min(name.size(), sizeof(out->sun_path) - 1);
  std::memcpy(out->sun_path + 1, name.data(), n);  // sun_path[0] = '\0': the abstract namespace
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

void closeAll(const int* fds, int n) {
  for (int i = 0; i < n; ++i)
    if (fds[i] >= 0) ::close(fds[i]);
}

}  // namespace

std::string ipcSocketName(const IpcAddress& addr) {
  char text[96];
  std::snprintf(text, sizeof(text), "accl-ipc-%016llx-%d-%016llx", (unsigned long long)addr.scope, addr.rank,
                (unsigned long long)addr.nonce);
  return text;
}

IpcSocket& IpcSocket::operator=(IpcSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    addr_ = other.addr_;
    other.fd_ = -1;
  }
  return *this;
}

ncclResult_t IpcSocket::open(uint64_t scope, int rank) {
  close();
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ncclSystemError, "ipc socket: socket(AF_UNIX) failed: %s", std::strerror(errno));
  IpcAddress addr{scope, 0, rank, 0};
  for (int attempt = 0; attempt < 8; ++attempt) {  // a collision of 64-bit nonces is next to impossible
    addr.nonce = randomU64();
    sockaddr_un sa;
    socklen_t len = abstractAddress(addr, &sa);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) == 0) {
      fd_ = fd;
      addr_ = addr;
      return ncclSuccess;
    }
    if (errno != EADDRINUSE) break;
  }
  int err = errno;
  ::close(fd);
  return fail(ncclSystemError, "ipc socket: cannot bind %s (rank %d): %s", ipcSocketName(addr).c_str(), rank,
              std::strerror(err));
}

void IpcSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ncclResult_t IpcSocket::sendFd(const IpcAddress& to, int fd, const IpcFdHeader& header, int timeoutMs) const {
  if (fd < 0) return fail(ncclInvalidArgument, "ipc socket: cannot send fd %d to %s", fd, ipcSocketName(to).c_str());
  int s = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail(ncclSystemError, "ipc socket: socket(AF_UNIX) failed: %s", std::strerror(errno));
  sockaddr_un sa;
  socklen_t len = abstractAddress(to, &sa);
  IpcFdHeader h = header;
  iovec iov{&h, sizeof(h)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_name = &sa;
  msg.msg_namelen = len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));

  Deadline deadline(timeoutMs < 0 ? 0 : timeoutMs);
  int err = 0;
  for (;;) {
    if (::sendmsg(s, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(h))) {
      ::close(s);
      return ncclSuccess;
    }
    err = errno;
    // Not bound yet (ECONNREFUSED / ENOENT) or its queue is full (EAGAIN): wait and retry.
    const bool retry = err == ECONNREFUSED || err == ENOENT || err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
    if (!retry || deadline.expired()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::close(s);
  return fail(ncclSystemError, "ipc socket: cannot pass an fd to rank %d at %s within %d ms: %s%s", to.rank,
              ipcSocketName(to).c_str(), timeoutMs, std::strerror(err),
              err == ECONNREFUSED ? " (is the peer in another network namespace, or gone?)" : "");
}

ncclResult_t IpcSocket::recvFd(int fromRank, uint64_t token, int32_t tag, int timeoutMs, int* fd,
                               IpcFdHeader* header) const {
  *fd = -1;
  if (fd_ < 0) return fail(ncclInternalError, "ipc socket: recvFd on a closed socket");
  Deadline deadline(timeoutMs < 0 ? 0 : timeoutMs);
  IpcFdHeader h{};
  iovec iov{&h, sizeof(h)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  msghdr msg{};
  ssize_t n = -1;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, deadline.remainingMs());
    if (ready < 0 && errno != EINTR)
      return fail(ncclSystemError, "ipc socket %s: poll failed: %s", ipcSocketName(addr_).c_str(), std::strerror(errno));
    if (ready > 0) {
      std::memset(control, 0, sizeof(control));
      msg = msghdr{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      n = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
      if (n >= 0) break;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return fail(ncclSystemError, "ipc socket %s: recvmsg failed: %s", ipcSocketName(addr_).c_str(),
                    std::strerror(errno));
    }
    if (deadline.expired()) {
      if (timeoutMs == 0) return ncclInProgress;
      return fail(ncclSystemError, "ipc socket %s: no fd from rank %d (tag %d) within %d ms",
                  ipcSocketName(addr_).c_str(), fromRank, tag, timeoutMs);
    }
  }
  int fds[kMaxFdsPerMessage];
  int count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const int here = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < here && count < kMaxFdsPerMessage; ++i)
      std::memcpy(&fds[count++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
  }
  const char* why = nullptr;
  if (n != static_cast<ssize_t>(sizeof(h)) || (msg.msg_flags & MSG_TRUNC)) why = "a message of the wrong size";
  else if (msg.msg_flags & MSG_CTRUNC) why = "too many descriptors";
  else if (count != 1) why = count == 0 ? "a message without a descriptor" : "more than one descriptor";
  else if (h.magic != IpcFdHeader::kMagic) why = "a message that is not an accl fd header";
  else if (h.scope != addr_.scope) why = "a header of another scope (communicator)";
  else if (h.fromRank != fromRank) why = "a header from another rank";
  else if (h.token != token) why = "a header with the wrong token";
  else if (h.tag != tag) why = "a header with another tag";
  if (why != nullptr) {
    closeAll(fds, count);
    return fail(ncclSystemError,
                "ipc socket %s: expected an fd from rank %d (tag %d), received %s (rank %d, tag %d); refused",
                ipcSocketName(addr_).c_str(), fromRank, tag, why, h.fromRank, h.tag);
  }
  *fd = fds[0];
  if (header) *header = h;
  return ncclSuccess;
}

}  // namespace accl
