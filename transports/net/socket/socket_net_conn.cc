// SocketNetConn: requests, the control-socket protocol and task dealing (socket_net_conn.h).
#include "transports/net/socket/socket_net_conn.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "transports/net/socket/socket_net_config.h"
#include "util/check.h"
#include "util/log.h"

namespace accl::socketnet {
namespace {

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

// Above this many pieces per message the header is not from a sane peer.
constexpr uint64_t kMaxTasksPerMessage = 1u << 20;

}  // namespace

SocketNetConn::SocketNetConn(bool sending, Socket ctrl, std::vector<Socket> data, int nSocksPerThread,
                             std::string devName)
    : sending_(sending),
      ctrl_(std::move(ctrl)),
      data_(std::move(data)),
      nSocksPerThread_(nSocksPerThread),
      inlineBytes_(inlineBytes()),
      minTaskBytes_(minTaskBytes()) {
  peerText_ = ctrl_.peerAddress().toString() + " (" + devName + ")";
}

SocketNetConn::~SocketNetConn() {
  for (auto& w : workers_) w->stop();
}

ncclResult_t SocketNetConn::start() {
  if (data_.empty()) return ncclSuccess;
  const int nThreads = static_cast<int>(data_.size()) / nSocksPerThread_;
  for (int t = 0; t < nThreads; ++t) {
    std::vector<Socket*> lanes;
    for (int s = 0; s < nSocksPerThread_; ++s) lanes.push_back(&data_[t * nSocksPerThread_ + s]);
    workers_.push_back(std::make_unique<DataWorker>(std::move(lanes), sending_, &status_, peerText_));
    ACCL_CHECK(workers_.back()->start());
  }
  return ncclSuccess;
}

void SocketNetConn::setError(ncclResult_t code, const char* fmt, ...) {
  char text[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  status_.set(code, text);
}

void SocketNetConn::ioError(const char* op, long n, int err, size_t done, size_t total) {
  if (n == 0)
    setError(ncclRemoteError, "NET/Socket: %s %s: connection closed by the peer (control socket, %zu of %zu bytes)",
             op, peerText_.c_str(), done, total);
  else
    setError(socketErrorCode(err), "NET/Socket: %s %s failed: %s (control socket, %zu of %zu bytes)", op,
             peerText_.c_str(), ctrl_.ioErrorText(err).c_str(), done, total);
}

ncclResult_t SocketNetConn::post(std::unique_ptr<SocketNetRequest> r, NetRequest** request) {
  r->conn = this;
  *request = r.get();
  requests_.push_back(std::move(r));
  progress();
  return ncclSuccess;
}

ncclResult_t SocketNetConn::isend(void* data, size_t size, int tag, NetRequest** request) {
  *request = nullptr;
  ACCL_CHECK(status_.report());
  if (size > 0 && data == nullptr)
    return fail(ncclInvalidArgument, "NET/Socket isend to %s: data = NULL with size %zu", peerText_.c_str(), size);
  if (requests_.size() >= static_cast<size_t>(kMaxRequests)) return ncclSuccess;  // full: call again
  auto r = std::make_unique<SocketNetRequest>();
  r->tag = tag;
  r->data = static_cast<char*>(data);
  r->capacity = size;
  r->header.tag = tag;
  r->header.size = size;
  if (size > inlineBytes_ && !data_.empty())
    r->header.taskBytes = std::max<uint64_t>(minTaskBytes_, (size + data_.size() - 1) / data_.size());
  r->headerDone = true;
  if (r->header.taskBytes != 0) dealTasks(r.get());
  return post(std::move(r), request);
}

ncclResult_t SocketNetConn::irecv(void* data, size_t size, int tag, NetRequest** request) {
  *request = nullptr;
  ACCL_CHECK(status_.report());
  if (size > 0 && data == nullptr)
    return fail(ncclInvalidArgument, "NET/Socket irecv from %s: data = NULL with size %zu", peerText_.c_str(),
                size);
  if (requests_.size() >= static_cast<size_t>(kMaxRequests)) return ncclSuccess;
  auto r = std::make_unique<SocketNetRequest>();
  r->tag = tag;
  r->data = static_cast<char*>(data);
  r->capacity = size;
  return post(std::move(r), request);
}

void SocketNetConn::dealTasks(SocketNetRequest* r) {
  const uint64_t size = r->header.size, piece = r->header.taskBytes;
  r->tasks.left.store(static_cast<int>((size + piece - 1) / piece), std::memory_order_relaxed);
  for (uint64_t off = 0; off < size; off += piece) {
    size_t sock = nextSocket_++ % data_.size();
    DataTask t;
    t.data = r->data + off;
    t.bytes = static_cast<size_t>(std::min(piece, size - off));
    t.counter = &r->tasks;
    workers_[sock / nSocksPerThread_]->enqueue(static_cast<int>(sock % nSocksPerThread_), t);
  }
}

void SocketNetConn::progress() {
  if (status_.failed()) return;
  if (sending_)
    progressSend();
  else
    progressRecv();
}

void SocketNetConn::progressSend() {
  for (auto& owned : requests_) {
    SocketNetRequest* r = owned.get();
    if (r->ctrlFinished) continue;
    const size_t hdr = sizeof(MsgHeader);
    const size_t inl = r->header.taskBytes == 0 ? r->header.size : 0;
    const size_t total = hdr + inl;
    while (r->ctrlBytes < total) {
      iovec iov[2];
      int n = 0;
      if (r->ctrlBytes < hdr) {
        iov[n++] = iovec{reinterpret_cast<char*>(&r->header) + r->ctrlBytes, hdr - r->ctrlBytes};
        if (inl > 0) iov[n++] = iovec{r->data, inl};
      } else {
        iov[n++] = iovec{r->data + (r->ctrlBytes - hdr), total - r->ctrlBytes};
      }
      ssize_t k = ctrl_.sendSomeV(iov, n);
      if (k > 0) {
        r->ctrlBytes += static_cast<size_t>(k);
        continue;
      }
      int err = errno;
      if (k < 0 && wouldBlock(err)) return;
      ioError("send to", k < 0 ? -1 : 1, err, r->ctrlBytes, total);
      return;
    }
    r->ctrlFinished = true;
  }
}

void SocketNetConn::progressRecv() {
  for (auto& owned : requests_) {
    SocketNetRequest* r = owned.get();
    if (r->ctrlFinished) continue;
    const size_t hdr = sizeof(MsgHeader);
    // The header, then (when inline) the payload straight into the receive buffer.
    while (true) {
      size_t total = hdr + (r->headerDone && r->header.taskBytes == 0 ? r->header.size : 0);
      if (r->ctrlBytes >= total) break;
      char* dst = r->ctrlBytes < hdr ? reinterpret_cast<char*>(&r->header) + r->ctrlBytes
                                     : r->data + (r->ctrlBytes - hdr);
      size_t want = r->ctrlBytes < hdr ? hdr - r->ctrlBytes : total - r->ctrlBytes;
      ssize_t k = ctrl_.recvSome(dst, want);
      if (k > 0) {
        r->ctrlBytes += static_cast<size_t>(k);
        if (r->ctrlBytes == hdr && !r->headerDone) {
          r->headerDone = true;
          if (!acceptHeader(r)) return;
        }
        continue;
      }
      int err = errno;
      if (k < 0 && wouldBlock(err)) return;
      ioError("recv from", k, err, r->ctrlBytes, total);
      return;
    }
    r->ctrlFinished = true;
  }
}

bool SocketNetConn::acceptHeader(SocketNetRequest* r) {
  const MsgHeader& h = r->header;
  if (h.tag != r->tag) {
    setError(ncclInvalidUsage,
             "NET/Socket: recv from %s: the next message has tag %d but the receive posted for it has tag %d "
             "(messages meet receives in posting order)",
             peerText_.c_str(), h.tag, r->tag);
    return false;
  }
  if (h.size > r->capacity) {
    setError(ncclInvalidUsage, "NET/Socket: recv from %s: message of %llu bytes (tag %d) truncated: the receive "
             "buffer has %zu bytes",
             peerText_.c_str(), static_cast<unsigned long long>(h.size), h.tag, r->capacity);
    return false;
  }
  if (h.taskBytes != 0 && (data_.empty() || h.size / h.taskBytes > kMaxTasksPerMessage)) {
    setError(ncclRemoteError, "NET/Socket: recv from %s: malformed message header (size %llu, piece %llu, %zu "
             "data sockets)",
             peerText_.c_str(), static_cast<unsigned long long>(h.size),
             static_cast<unsigned long long>(h.taskBytes), data_.size());
    return false;
  }
  if (h.taskBytes != 0 && h.size > 0) dealTasks(r);
  return true;
}

ncclResult_t SocketNetConn::test(SocketNetRequest* r, int* done, size_t* sizes) {
  *done = 0;
  progress();
  ACCL_CHECK(status_.report());
  if (!r->ctrlFinished || r->tasks.left.load(std::memory_order_acquire) != 0) return ncclSuccess;
  *done = 1;
  if (sizes) sizes[0] = r->header.size;
  auto it = std::find_if(requests_.begin(), requests_.end(), [&](const auto& p) { return p.get() == r; });
  if (it != requests_.end()) requests_.erase(it);
  return ncclSuccess;
}

}  // namespace accl::socketnet
