// DataWorker: one helper thread of a socket-net connection. It owns a few data sockets ("lanes")
// and moves the pieces (tasks) of large messages on them: each lane works through its tasks in
// the order they were queued, with non-blocking send / recv, and the thread sleeps in poll() on
// the lanes that have work plus an eventfd that enqueue() and stop() ring. Nothing here waits
// without a bound: a stopped worker exits within one poll slice.
//
// A task that fails (peer closed, reset, syscall error) marks its lane broken, records the error
// in the connection's ConnStatus naming the peer, and completes with its request marked; later
// tasks on a broken lane complete the same way at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transports/net/socket/socket_net_status.h"
#include "util/socket.h"

namespace accl::socketnet {

// What a request counts down. A request outlives its tasks: a connection joins its workers
// before it frees its requests.
struct TaskCounter {
  std::atomic<int> left{0};
};

struct DataTask {
  char* data = nullptr;
  size_t bytes = 0;
  size_t done = 0;
  TaskCounter* counter = nullptr;
};

class DataWorker {
 public:
  // `lanes` are borrowed from the connection and outlive the worker. `sending` picks send / recv.
  DataWorker(std::vector<Socket*> lanes, bool sending, ConnStatus* status, std::string what);
  ~DataWorker();  // stop() + join
  DataWorker(const DataWorker&) = delete;
  DataWorker& operator=(const DataWorker&) = delete;

  ncclResult_t start();
  void enqueue(int lane, const DataTask& task);
  void stop();

 private:
  struct Lane {
    Socket* sock;
    std::deque<DataTask> tasks;  // only the worker pops; references stay valid across push_back
    bool broken = false;
  };
  void run();
  // Moves bytes of the lane's head task; true when anything happened (bytes or completion).
  bool progress(Lane& lane, DataTask& task, bool* finished);
  void finish(Lane& lane);
  void ring();

  std::vector<Lane> lanes_;
  bool sending_;
  ConnStatus* status_;
  std::string what_;  // "send to 1.2.3.4:5 (eth0)" for messages
  std::mutex mutex_;
  int wakeFd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace accl::socketnet
