// The process's table of communicators for accl-ras (see ras_comms.h).
#include "activity/ras_comms.h"

#include <algorithm>
#include <atomic>
#include <shared_mutex>

#include "util/str_format.h"
#include "util/time.h"

namespace accl {
namespace {

// Readers (every launch looks its communicator up) share the lock; adds and removes are rare.
struct Table {
  std::shared_mutex mutex;
  std::vector<std::shared_ptr<RasComm>> comms;
};

// Never destroyed: the server thread may still read it while the process exits. A forked child
// gets a fresh one (the parent's is write-locked across the fork, and a reader-writer lock cannot
// be unlocked by the child's thread).
Table*& tablePtr() {
  static Table* t = new Table;
  return t;
}

Table& table() { return *tablePtr(); }

std::atomic<void (*)()> commsChangedListener{nullptr};

void tellListener() {
  if (void (*listener)() = commsChangedListener.load()) listener();
}

}  // namespace

void rasAddComm(const ncclComm* comm, const void* waitKey, RasIdentity identity) {
  auto rec = std::make_shared<RasComm>();
  static_cast<RasIdentity&>(*rec) = std::move(identity);
  rec->comm = comm;
  rec->waitKey = waitKey;
  rec->addedNs = nowNs();
  {
    Table& t = table();
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    t.comms.push_back(std::move(rec));
  }
  tellListener();
}

void rasRemoveComm(const ncclComm* comm) {
  bool removed = false;
  {
    Table& t = table();
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    auto it = std::find_if(t.comms.begin(), t.comms.end(), [comm](const auto& c) { return c->comm == comm; });
    if (it != t.comms.end()) {
      t.comms.erase(it);
      removed = true;
    }
  }
  if (removed) tellListener();
}

std::shared_ptr<RasComm> rasFindComm(const ncclComm* comm) {
  Table& t = table();
  std::shared_lock<std::shared_mutex> lock(t.mutex);
  for (const auto& c : t.comms)
    if (c->comm == comm) return c;
  return nullptr;
}

size_t rasCommCount() {
  Table& t = table();
  std::shared_lock<std::shared_mutex> lock(t.mutex);
  return t.comms.size();
}

std::vector<std::shared_ptr<RasComm>> rasListComms(const std::function<void(const RasComm&)>& whileListed) {
  Table& t = table();
  std::shared_lock<std::shared_mutex> lock(t.mutex);
  if (whileListed)
    for (const auto& c : t.comms) whileListed(*c);
  return t.comms;
}

std::string rasCurrentOpText(const void* waitKey) {
  std::shared_ptr<RasComm> rec;
  {
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    for (const auto& c : t.comms)
      if (c->waitKey == waitKey) rec = c;
  }
  if (!rec) return "";
  const RasLaunchState st = rec->launchState();
  if (!st.busy) return "";
  return strFormat("%s for %.1f s", rasOpText(st.current).c_str(), (nowNs() - st.currentSinceNs) / 1e9);
}

RasActivity RasComm::activity() const {
  RasActivity a;
  static_cast<RasLaunchState&>(a) = launchState();
  if (hasLastNote()) {
    std::lock_guard<std::mutex> lock(noteMutex_);
    a.lastNote = lastNote_;
  }
  return a;
}

void RasComm::setLastNote(std::string note) {
  std::lock_guard<std::mutex> lock(noteMutex_);
  hasNote_.store(!note.empty(), std::memory_order_relaxed);
  lastNote_ = std::move(note);
}

void rasSetCommsChangedListener(void (*listener)()) { commsChangedListener.store(listener); }

void rasCommsLockForFork() { table().mutex.lock(); }

void rasCommsUnlockAfterFork(bool inChild) {
  if (inChild)
    tablePtr() = new Table;  // the parent's communicators cannot be used here; its table is abandoned
  else
    table().mutex.unlock();
}

}  // namespace accl
