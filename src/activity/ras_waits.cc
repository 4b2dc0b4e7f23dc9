// The table of sleeping waits (see ras_waits.h).
#include "activity/ras_waits.h"

#include <algorithm>
#include <mutex>

#include "util/time.h"

namespace accl {
namespace {

struct Note {
  uint64_t id;
  const void* key;
  RasWait wait;
};

struct Table {
  std::mutex mutex;
  uint64_t nextId = 1;
  std::vector<Note> notes;
};

// Never destroyed: a wait may still end while the process exits.
Table& table() {
  static Table* t = new Table;
  return *t;
}

}  // namespace

RasWaitNote::RasWaitNote(const void* key, int peer) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  id_ = t.nextId++;
  t.notes.push_back(Note{id_, key, RasWait{peer, nowNs()}});
}

RasWaitNote::~RasWaitNote() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = std::find_if(t.notes.begin(), t.notes.end(), [this](const Note& n) { return n.id == id_; });
  if (it != t.notes.end()) t.notes.erase(it);
}

std::vector<RasWait> rasWaitsOf(const void* key) {
  Table& t = table();
  std::vector<RasWait> out;
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const Note& n : t.notes)
    if (n.key == key) out.push_back(n.wait);
  return out;
}

void rasWaitsLockForFork() { table().mutex.lock(); }

void rasWaitsUnlockAfterFork(bool inChild) {
  if (inChild) table().notes.clear();
  table().mutex.unlock();
}

}  // namespace accl
