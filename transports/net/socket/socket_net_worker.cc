// DataWorker (socket_net_worker.h).
#include "transports/net/socket/socket_net_worker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/check.h"
#include "util/log.h"

namespace accl::socketnet {
namespace {

constexpr int kPollSliceMs = 100;

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

}  // namespace

DataWorker::DataWorker(std::vector<Socket*> lanes, bool sending, ConnStatus* status, std::string what)
    : sending_(sending), status_(status), what_(std::move(what)) {
  for (Socket* s : lanes) lanes_.push_back(Lane{s, {}, false});
}

DataWorker::~DataWorker() {
  stop();
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

ncclResult_t DataWorker::start() {
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) {
    int err = errno;
    return fail(ncclSystemError, "NET/Socket: eventfd for a helper thread failed: %s", strerror(err));
  }
  thread_ = std::thread([this] { run(); });
  return ncclSuccess;
}

void DataWorker::ring() {
  uint64_t one = 1;
  if (wakeFd_ >= 0) (void)!::write(wakeFd_, &one, sizeof(one));
}

void DataWorker::enqueue(int lane, const DataTask& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lanes_[lane].tasks.push_back(task);
  }
  ring();
}

void DataWorker::stop() {
  stop_.store(true, std::memory_order_release);
  ring();
  if (thread_.joinable()) thread_.join();
}

void DataWorker::finish(Lane& lane) {
  TaskCounter* counter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    counter = lane.tasks.front().counter;
    lane.tasks.pop_front();
  }
  counter->left.fetch_sub(1, std::memory_order_acq_rel);
}

bool DataWorker::progress(Lane& lane, DataTask& task, bool* finished) {
  *finished = false;
  if (lane.broken) {
    *finished = true;
    return true;
  }
  bool moved = false;
  Socket& sock = *lane.sock;
  while (task.done < task.bytes) {
    ssize_t n = sending_ ? sock.sendSome(task.data + task.done, task.bytes - task.done)
                         : sock.recvSome(task.data + task.done, task.bytes - task.done);
    if (n > 0) {
      task.done += static_cast<size_t>(n);
      moved = true;
      continue;
    }
    int err = n == 0 ? 0 : errno;
    if (n < 0 && wouldBlock(err)) return moved;
    // n == 0 on a receive: the peer closed the connection in the middle of a message.
    char text[512];
    snprintf(text, sizeof(text),
             "NET/Socket: %s %s: %s after %zu of %zu bytes of a message piece (data socket)",
             sending_ ? "send to" : "recv from", what_.c_str(),
             n == 0 ? "connection closed by the peer" : sock.ioErrorText(err).c_str(), task.done, task.bytes);
    status_->set(n == 0 ? ncclRemoteError : socketErrorCode(err), text);
    lane.broken = true;
    *finished = true;
    return true;
  }
  *finished = true;
  return true;
}

void DataWorker::run() {
  std::vector<pollfd> fds;
  while (!stop_.load(std::memory_order_acquire)) {
    bool progressed = false;
    fds.clear();
    for (Lane& lane : lanes_) {
      DataTask* head;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        head = lane.tasks.empty() ? nullptr : &lane.tasks.front();
      }
      if (!head) continue;
      bool finished = false;
      if (progress(lane, *head, &finished)) progressed = true;
      if (finished) {
        finish(lane);
      } else {
        fds.push_back(pollfd{lane.sock->fd(), lane.sock->pollEvents(static_cast<short>(sending_ ? POLLOUT : POLLIN)), 0});
      }
    }
    if (progressed) continue;
    fds.push_back(pollfd{wakeFd_, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), kPollSliceMs);
    if (n > 0 && (fds.back().revents & POLLIN)) {
      uint64_t drained;
      (void)!::read(wakeFd_, &drained, sizeof(drained));
    }
  }
}

}  // namespace accl::socketnet
