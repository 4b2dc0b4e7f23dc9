// The cross-process turn on a virtual device (timeslice.h). The turn is an flock on a file per
// (user, device) in /dev/shm, whose first page holds how many processes wait for it and how many
// times it changed hands; inside a process, the first block to need the turn takes the lock for
// every block of the process. A process that dies drops the lock with its file descriptor.
#include "vgpu/timeslice.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "vgpu/vgpu.h"

namespace accl::vgpu {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxDevices = 16;

// What the processes sharing a device see of each other.
struct SharedTurn {
  std::atomic<int> waiting;
  std::atomic<uint64_t> handovers;
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the shared page holds lock-free atomics only");

Clock::duration slice() {
  static const Clock::duration d = [] {
    const char* v = std::getenv("ACCL_VGPU_TIMESLICE_MS");
    const int ms = v ? std::atoi(v) : 0;
    return std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(ms > 0 ? ms : 2));
  }();
  return d;
}

class Turn {
 public:
  void blockStarted() {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_;
  }

  void blockEnded() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0 && held_) release();
  }

  void checkpoint(int device) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (held_) {
        if (Clock::now() - since_ < slice() || shared_ == nullptr || shared_->waiting.load() == 0) return;
        // The slice is over and another process waits: hand over, and wait until it has taken the
        // device (or a moment passed) before asking for it again.
        const uint64_t handovers = shared_->handovers.load();
        release();
        lock.unlock();
        const auto until = Clock::now() + std::chrono::milliseconds(20);
        while (shared_->handovers.load() == handovers && Clock::now() < until)
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        lock.lock();
        continue;
      }
      if (acquiring_) {
        cv_.wait(lock);
        continue;
      }
      acquiring_ = true;
      lock.unlock();
      const bool ok = acquire(device);
      lock.lock();
      acquiring_ = false;
      held_ = true;  // without the file (no /dev/shm) every process runs: no turns, as with MPS
      since_ = Clock::now();
      (void)ok;
      cv_.notify_all();
      return;
    }
  }

 private:
  bool open(int device) {
    if (fd_ >= 0) return true;
    char path[96];
    std::snprintf(path, sizeof path, "/dev/shm/accl-vgpu.%u.dev%d", unsigned(getuid()), device);
    fd_ = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      logLine("cannot open %s (%m): processes on device %d run without turns", path, device);
      return false;
    }
    if (ftruncate(fd_, 4096) != 0) return false;
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return false;
    shared_ = static_cast<SharedTurn*>(p);
    return true;
  }

  bool acquire(int device) {
    if (!open(device) || shared_ == nullptr) return false;
    shared_->waiting.fetch_add(1);
    int rc;
    while ((rc = flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    shared_->waiting.fetch_sub(1);
    shared_->handovers.fetch_add(1);
    return rc == 0;
  }

  void release() {  // mu_ held
    held_ = false;
    if (fd_ >= 0) flock(fd_, LOCK_UN);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  bool held_ = false;
  bool acquiring_ = false;
  Clock::time_point since_;
  int fd_ = -1;
  SharedTurn* shared_ = nullptr;
};

Turn* turnOf(int device) {
  static Turn* turns = new Turn[kMaxDevices];  // outlives static destructors (detached blocks)
  return !mpsEnabled() && device >= 0 && device < kMaxDevices ? &turns[device] : nullptr;
}

}  // namespace

bool mpsEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("ACCL_VGPU_MPS");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

void turnBlockStarted(int device) {
  if (Turn* t = turnOf(device)) t->blockStarted();
}
void turnBlockEnded(int device) {
  if (Turn* t = turnOf(device)) t->blockEnded();
}
void turnCheckpoint(int device) {
  if (Turn* t = turnOf(device)) t->checkpoint(device);
}

}  // namespace accl::vgpu
