// IpcSocket: passes file descriptors (a cuMem allocation exported as a POSIX fd, a memfd) between
// processes of one machine and one network namespace, over abstract-namespace unix datagram
// sockets with SCM_RIGHTS. A socket is named after a scope (e.g. a communicator hash), a rank and
// a random nonce ("\0accl-ipc-<scope>-<rank>-<nonce>"), so two jobs, two communicators or two
// connections never share a name, and nothing is left in the file system.
//
// Every fd travels with an IpcFdHeader; the receiver accepts it only when the header names the
// scope, the sending rank and the token it expects (the token is random and reaches the sender
// over an authenticated channel, e.g. a connection blob over the bootstrap), so another process
// that guesses the name cannot slip it an fd. Every wait is bounded: send and receive take a
// timeout and never block past it (timeout 0 = try once).
#pragma once

#include <cstdint>
#include <string>

#include "nccl.h"

namespace accl {

// Where an IpcSocket listens: plain bytes, carried in connection blobs.
struct IpcAddress {
  uint64_t scope = 0;
  uint64_t nonce = 0;
  int32_t rank = -1;
  uint32_t reserved = 0;
};

// Sent with every fd.
struct IpcFdHeader {
  static constexpr uint64_t kMagic = 0x6163636c'69706366ull;  // "acclipcf"
  uint64_t magic = kMagic;
  uint64_t scope = 0;
  uint64_t token = 0;    // what the receiver expects (it announced it)
  int32_t fromRank = -1;
  int32_t tag = 0;       // which of the receiver's expected fds (e.g. a channel)
  uint64_t bytes = 0;    // the size of what the fd maps (informational, checked by the caller)
};

// The abstract name of `addr`, without the leading NUL (for messages and tests).
std::string ipcSocketName(const IpcAddress& addr);

class IpcSocket {
 public:
  IpcSocket() = default;
  ~IpcSocket() { close(); }
  IpcSocket(const IpcSocket&) = delete;
  IpcSocket& operator=(const IpcSocket&) = delete;
  IpcSocket(IpcSocket&& other) noexcept { *this = std::move(other); }
  IpcSocket& operator=(IpcSocket&& other) noexcept;

  // Binds a new socket for `rank` in `scope`, with a fresh random nonce.
  ncclResult_t open(uint64_t scope, int rank);
  void close();
  bool isOpen() const { return fd_ >= 0; }
  const IpcAddress& address() const { return addr_; }

  // Sends `fd` (not consumed: the caller still closes its copy) with `header` to the socket at
  // `to`. Retries while the peer is not bound yet or its queue is full, until timeoutMs.
  ncclResult_t sendFd(const IpcAddress& to, int fd, const IpcFdHeader& header, int timeoutMs) const;

  // Receives one fd within timeoutMs. The header must carry this socket's scope, `fromRank`,
  // `token` and `tag`; anything else is refused (its fd closed) with ncclSystemError. Without a
  // message in time: ncclInProgress when timeoutMs is 0 (poll), else ncclSystemError naming the
  // peer and the wait. On success *fd is a new descriptor the caller owns; *header (optional)
  // is the header received.
  ncclResult_t recvFd(int fromRank, uint64_t token, int32_t tag, int timeoutMs, int* fd,
                      IpcFdHeader* header = nullptr) const;

 private:
  int fd_ = -1;
  IpcAddress addr_{};
};

}  // namespace accl
