// ChannelWorkers: one thread per extra channel, handed one task per launch.
#include "backend/host/channel_workers.h"

namespace accl {

ChannelWorkers::~ChannelWorkers() {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mutex);
      w->stop = true;
    }
    w->cv.notify_all();
    if (w->thread.joinable()) w->thread.join();
  }
}

void ChannelWorkers::loop(Worker* w) {
  std::unique_lock<std::mutex> lock(w->mutex);
  while (true) {
    w->cv.wait(lock, [w] { return w->stop || w->task != nullptr; });
    if (w->stop) return;
    const std::function<ncclResult_t(int)>* task = w->task;
    int channel = w->channel;
    lock.unlock();
    ncclResult_t res = (*task)(channel);
    lock.lock();
    w->result = res;
    w->task = nullptr;
    w->done = true;
    w->cv.notify_all();
  }
}

ncclResult_t ChannelWorkers::runAll(int n, const std::function<ncclResult_t(int)>& task) {
  while (static_cast<int>(workers_.size()) < n - 1) {
    auto w = std::make_unique<Worker>();
    Worker* raw = w.get();
    w->thread = std::thread([this, raw] { loop(raw); });
    workers_.push_back(std::move(w));
  }
  for (int c = 1; c < n; ++c) {
    Worker& w = *workers_[c - 1];
    std::lock_guard<std::mutex> lock(w.mutex);
    w.channel = c;
    w.done = false;
    w.task = &task;
    w.cv.notify_all();
  }
  ncclResult_t first = task(0);
  for (int c = 1; c < n; ++c) {
    Worker& w = *workers_[c - 1];
    std::unique_lock<std::mutex> lock(w.mutex);
    w.cv.wait(lock, [&w] { return w.done; });
    if (first == ncclSuccess) first = w.result;
  }
  return first;
}

}  // namespace accl
