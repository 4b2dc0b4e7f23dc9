// What the socket NetDevice puts on the wire: the listen handle, the hello each TCP connection
// sends first, and the header in front of every message on the control connection. Raw structs
// in host byte order: both ends run accl on the same kind of host, as with NCCL.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/net/net_device.h"
#include "util/socket_address.h"

namespace accl::socketnet {

constexpr uint64_t kHandleKind = 0x3148534e6c636361ull;  // "acclNSH1"

// Limits (NCCL's): helper threads and data sockets per connection, requests in flight per comm.
constexpr int kMaxThreads = 16;
constexpr int kMaxDataSockets = 64;
constexpr int kMaxRequests = 32;

// The listen handle. listenMagic is random per listener: a socket that cannot present it was not
// sent by a peer that received this handle (through the communicator's bootstrap).
struct HandleWire {
  uint64_t kind;
  uint64_t listenMagic;
  SocketAddress addr;
  uint32_t nThreads;         // the listener's choice; the connecting side follows it
  uint32_t nSocksPerThread;  // data sockets per thread (0 threads: no data sockets)
};
static_assert(sizeof(HandleWire) <= kNetHandleBytes, "the handle must fit NCCL's 128 bytes");

// Every socket of a connection (control = index 0, data = 1..nDataSockets) starts with
// util/socket's plain handshake (u64 listenMagic, i32 SocketType::kNetSocket) and then this.
struct HelloTail {
  uint64_t connId;         // random, the same on every socket of one connection (never 0)
  uint32_t index;          // 0 = control socket, 1..nDataSockets = data sockets
  uint32_t nDataSockets;   // must equal the handle's nThreads * nSocksPerThread
};
constexpr size_t kPlainHandshakeBytes = sizeof(uint64_t) + sizeof(int32_t);
constexpr size_t kHelloBytes = kPlainHandshakeBytes + sizeof(HelloTail);

// Precedes each message on the control socket. taskBytes == 0: the payload follows inline on the
// control socket. Otherwise it travels on the data sockets in pieces of taskBytes (the last one
// shorter), dealt round-robin over the data sockets, continuing where the previous message
// stopped; both ends deal the same way, so each data socket carries its pieces in message order.
struct MsgHeader {
  int32_t tag;
  uint32_t reserved;
  uint64_t size;
  uint64_t taskBytes;
};
static_assert(sizeof(MsgHeader) == 24, "MsgHeader is a wire format");

}  // namespace accl::socketnet
