// Host backend state: the persistent worker threads of one communicator. Worker c runs channel
// c's share of each launch (channel 0 runs on the launching thread). Threads start on first use
// and stop with the communicator's backend.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "nccl.h"

namespace accl {

class ChannelWorkers {
 public:
  ChannelWorkers() = default;
  ~ChannelWorkers();
  ChannelWorkers(const ChannelWorkers&) = delete;
  ChannelWorkers& operator=(const ChannelWorkers&) = delete;

  // Runs task(c) for c in [0, n): c = 0 on the calling thread, the others on workers; returns
  // the first failure once all are done.
  ncclResult_t runAll(int n, const std::function<ncclResult_t(int)>& task);

 private:
  struct Worker {
    std::thread thread;
    std::mutex mutex;
    std::condition_variable cv;
    const std::function<ncclResult_t(int)>* task = nullptr;  // set while a launch is pending
    int channel = 0;
    bool done = true;
    bool stop = false;
    ncclResult_t result = ncclSuccess;
  };
  void loop(Worker* w);

  std::vector<std::unique_ptr<Worker>> workers_;  // workers_[i] serves channel i + 1
};

}  // namespace accl
