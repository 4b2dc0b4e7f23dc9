// The TLS helper thread (see tls_pump.h).
#include "util/tls_pump.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "util/tls_session.h"

namespace accl {
namespace {

constexpr int kPumpSliceMs = 50;

// The helper thread: polls the fds of sessions whose handshake or queued writes are unfinished.
struct Pump {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::shared_ptr<TlsSession>> sessions;
  int wakeFd = -1;
  bool started = false;

  void add(std::shared_ptr<TlsSession> s) {
    std::lock_guard<std::mutex> lock(mutex);
    sessions.push_back(std::move(s));
    if (!started) {
      wakeFd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      std::thread([this] { run(); }).detach();
      started = true;
    }
    if (wakeFd >= 0) {
      uint64_t one = 1;
      (void)!::write(wakeFd, &one, sizeof(one));
    }
    cv.notify_one();
  }

  void run() {
    std::vector<std::shared_ptr<TlsSession>> work;
    std::vector<pollfd> fds;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [this] { return !sessions.empty(); });
        work = sessions;
      }
      fds.clear();
      if (wakeFd >= 0) fds.push_back(pollfd{wakeFd, POLLIN, 0});
      for (const auto& s : work)
        fds.push_back(pollfd{s->fd(), static_cast<short>(s->wantsWrite() ? POLLOUT : POLLIN), 0});
      (void)::poll(fds.data(), fds.size(), kPumpSliceMs);
      if (wakeFd >= 0 && (fds[0].revents & POLLIN)) {
        uint64_t drained;
        (void)!::read(wakeFd, &drained, sizeof(drained));
      }
      std::vector<TlsSession*> finished;
      for (const auto& s : work)
        if (!s->pump()) finished.push_back(s.get());
      if (finished.empty()) continue;
      std::lock_guard<std::mutex> lock(mutex);
      sessions.erase(std::remove_if(sessions.begin(), sessions.end(),
                                    [&](const std::shared_ptr<TlsSession>& s) {
                                      return std::find(finished.begin(), finished.end(), s.get()) != finished.end();
                                    }),
                     sessions.end());
    }
  }
};

// The process's pump, made on first use. Never destroyed: the thread may outlive static
// destructors. A forked child abandons its parent's (the thread is not there, its sessions are the
// parent's connections) and makes its own on first use; that is also why these two are
// constant-initialized rather than a lazily constructed static (see tls_config.cc).
constinit std::mutex gPumpMutex;
constinit Pump* gPump = nullptr;

Pump& pumpThread() {
  std::lock_guard<std::mutex> lock(gPumpMutex);
  if (!gPump) gPump = new Pump();
  return *gPump;
}

void lockBeforeFork() {
  gPumpMutex.lock();
  if (gPump) gPump->mutex.lock();
}
void unlockInParent() {
  if (gPump) gPump->mutex.unlock();
  gPumpMutex.unlock();
}
void forgetInChild() {
  if (gPump && gPump->wakeFd >= 0) ::close(gPump->wakeFd);
  gPump = nullptr;  // leaked with its (locked) mutex and the parent's sessions, never touched again
  gPumpMutex.unlock();
}
__attribute__((constructor)) void registerForkHandlers() {
  pthread_atfork(lockBeforeFork, unlockInParent, forgetInChild);
}

}  // namespace

void addToTlsPump(std::shared_ptr<TlsSession> session) { pumpThread().add(std::move(session)); }

}  // namespace accl
