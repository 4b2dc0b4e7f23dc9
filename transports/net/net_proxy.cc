// The network proxy thread (see net_proxy.h).
#include "transports/net/net_proxy.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "device/common/fifo.h"
#include "transports/transport.h"
#include "util/last_error.h"
#include "util/log.h"
#include "util/time.h"

namespace accl {
namespace {

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

// The kernel's struct futex_waitv (Linux 5.16+), declared here so older headers build.
struct FutexWaitv {
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};
constexpr uint32_t kFutex32 = 2;  // FUTEX_32; shared (not private), like the Prims' FUTEX_WAKE
constexpr size_t kMaxWaitv = 128;

std::atomic_ref<uint32_t> sleepersOf(FifoCounter* c) { return std::atomic_ref<uint32_t>(c->sleepers); }
uint32_t lowWord(FifoCounter* c) {
  return static_cast<uint32_t>(std::atomic_ref<uint64_t>(c->value).load(std::memory_order_seq_cst));
}

bool gWaitvMissing = false;  // the kernel has no futex_waitv: plain sleeps

}  // namespace

void NetProxy::add(ConnEnd* end, FifoCounter* doorbell) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(Entry{end, doorbell, false});
  }
  std::lock_guard<std::mutex> lock(threadMutex_);
  if (running_.load(std::memory_order_acquire)) return;
  stopping_.store(false, std::memory_order_release);
  running_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { loop(); });
}

void NetProxy::remove(ConnEnd* end) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [end](const Entry& e) { return e.end == end; }),
                 entries_.end());
}

void NetProxy::stop() {
  std::lock_guard<std::mutex> lock(threadMutex_);
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  thread_.join();
  running_.store(false, std::memory_order_release);
}

void NetProxy::sleepOnDoorbells(const std::vector<uint32_t>& seen, long us) {
  std::vector<FifoCounter*> bells;
  FutexWaitv waiters[kMaxWaitv];
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < entries_.size() && i < seen.size(); ++i)
      if (entries_[i].doorbell && !entries_[i].failed) bells.push_back(entries_[i].doorbell);
    // The entries may have changed since the sweep: then just sleep (seen no longer matches).
    if (bells.size() > kMaxWaitv || entries_.size() != seen.size()) bells.clear();
    for (size_t i = 0, b = 0; b < bells.size(); ++i)
      if (entries_[i].doorbell && !entries_[i].failed)
        waiters[b++] = FutexWaitv{seen[i], reinterpret_cast<uint64_t>(&entries_[i].doorbell->value), kFutex32, 0};
  }
  if (bells.empty() || gWaitvMissing) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, nullptr);
    return;
  }
  // Announce ourselves, then wait unless a doorbell already rang since the sweep (the kernel
  // compares each word with what the sweep saw): a Prims that publishes after this sees the
  // sleeper and wakes us.
  for (FifoCounter* c : bells) sleepersOf(c).fetch_add(1, std::memory_order_seq_cst);
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_nsec += us * 1000;
  if (deadline.tv_nsec >= 1000000000) deadline.tv_sec++, deadline.tv_nsec -= 1000000000;
  long rc = syscall(SYS_futex_waitv, waiters, bells.size(), 0, &deadline, CLOCK_MONOTONIC);
  if (rc < 0 && errno == ENOSYS) gWaitvMissing = true;
  for (FifoCounter* c : bells) sleepersOf(c).fetch_sub(1, std::memory_order_seq_cst);
}

void NetProxy::loop() {
  pthread_setname_np(pthread_self(), "accl-netproxy");
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // short idle sleeps should be short
  keepLastErrorOnThisThread();  // ncclGetLastError is the caller's: a proxy WARN must not replace it
  int64_t lastProgressUs = nowNs() / 1000;
  std::vector<uint32_t> seen;
  void* idle = nullptr;  // the ProxyCtrl event of the idle period now running
  while (!stopping_.load(std::memory_order_acquire)) {
    bool progressed = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen.resize(entries_.size());
      for (size_t i = 0; i < entries_.size(); ++i) seen[i] = entries_[i].doorbell ? lowWord(entries_[i].doorbell) : 0;
      for (Entry& e : entries_) {
        if (e.failed) continue;
        bool moved = false;
        const TransportSide& side = e.end->transport->side(e.end->side);
        if (side.proxyProgress(e.end, &moved) != ncclSuccess) e.failed = true;  // the transport closed it
        progressed |= moved;
      }
    }
    sweeps_.fetch_add(1, std::memory_order_relaxed);
    const int64_t now = nowNs() / 1000;
    if (progressed) {
      lastProgressUs = now;
      if (idle) {
        prof_->record(idle, prof::kProxyCtrlWakeup);
        prof_->stop(idle);
        idle = nullptr;
      }
      continue;
    }
    const int64_t idleUs = now - lastProgressUs;
    if (idleUs < 50) {
      sched_yield();
      continue;
    }
    const long pauseUs = idleUs < 5000 ? 20 : idleUs < 50000 ? 100 : kMaxIdleSleepUs;
    if (!idle && prof_ && prof_->wants(prof::kProxyCtrl)) {
      prof::Event e;
      e.d.type = prof::kProxyCtrl;
      idle = prof_->start(e);
      prof_->record(idle, prof::kProxyCtrlSleep);
    }
    sleepOnDoorbells(seen, pauseUs);
  }
  if (idle) prof_->stop(idle);
}

}  // namespace accl
