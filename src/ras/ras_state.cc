// The process's table of communicators for accl-ras (see ras_state.h).
#include "ras/ras_state.h"

#include <unistd.h>

#include <algorithm>
#include <shared_mutex>

#include "core/comm.h"
#include "core/engine.h"
#include "core/red_op_registry.h"
#include "device/common/dtypes.h"
#include "ras/ras_server.h"
#include "tuner/algo_proto_filter.h"
#include "util/params.h"
#include "ras/ras_text.h"
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

}  // namespace

std::string rasOpText(const RasOp& op) {
  if (op.func < 0) {
    std::string s = rasFmt("send/recv batch #%llu (%s %d", static_cast<unsigned long long>(op.seq),
                        op.firstIsSend ? "send to" : "recv from", op.firstPeer);
    if (op.nP2p > 1) s += rasFmt(", %d ops", op.nP2p);
    return s + ")";
  }
  std::string s = rasFmt("%s #%llu (count %llu %s", funcName(op.func), static_cast<unsigned long long>(op.seq),
                      static_cast<unsigned long long>(op.count), dtypeName(static_cast<ncclDataType_t>(op.type)));
  if (op.op >= 0) s += std::string(" ") + builtinRedOpName(op.op, "custom");
  if (op.root >= 0) s += rasFmt(" root %d", op.root);
  s += ")";
  if (op.nColl > 1) s += rasFmt(" + %d more collective%s", op.nColl - 1, op.nColl > 2 ? "s" : "");
  if (op.nP2p > 0) s += rasFmt(" + %d send/recv", op.nP2p);
  return s;
}

void rasAddComm(ncclComm* comm) {
  auto rec = std::make_shared<RasComm>();
  rec->comm = comm;
  rec->waitKey = &comm->abortFlag;
  rec->commHash = comm->commHash;
  rec->rank = comm->rank;
  rec->nranks = comm->nranks;
  rec->cudaDev = comm->cudaDev;
  rec->name = comm->config.commName;
  rec->checkCollectives = paramInt("ACCL_CHECK_COLLECTIVES") != 0;
  rec->addedNs = nowNs();
  if (comm->engine) rec->health = comm->engine->health;
  rec->peers.resize(comm->peers.size());
  if (comm->rank >= 0 && comm->rank < static_cast<int>(comm->peers.size())) {
    const PeerInfo& me = comm->peers[comm->rank];
    for (size_t r = 0; r < comm->peers.size(); ++r) {
      rec->peers[r].pid = comm->peers[r].pid;
      rec->peers[r].sameHost = comm->peers[r].hostHash == me.hostHash;
      rec->peers[r].sameProcess = comm->peers[r].pidHash == me.pidHash;
    }
  }
  {
    Table& t = table();
    std::unique_lock<std::shared_mutex> lock(t.mutex);
    t.comms.push_back(std::move(rec));
  }
  rasServerSync();
}

void rasRemoveComm(ncclComm* comm) {
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
  if (removed) rasServerSync();
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

std::string rasCurrentOpText(const void* waitKey) {
  std::shared_ptr<RasComm> rec;
  {
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    for (const auto& c : t.comms)
      if (c->waitKey == waitKey) rec = c;
  }
  if (!rec) return "";
  std::lock_guard<std::mutex> lock(rec->mutex);
  if (!rec->busy) return "";
  return rasFmt("%s for %.1f s", rasOpText(rec->current).c_str(), (nowNs() - rec->currentSinceNs) / 1e9);
}

std::vector<RasCommSnapshot> rasSnapshot() {
  std::vector<std::shared_ptr<RasComm>> recs;
  std::vector<RasCommSnapshot> out;
  {
    // The communicators' own words are read only here, while removal (which precedes any free)
    // is locked out.
    Table& t = table();
    std::shared_lock<std::shared_mutex> lock(t.mutex);
    recs = t.comms;
    out.resize(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) {
      const ncclComm* comm = recs[i]->comm;
      out[i].asyncResult = static_cast<int>(comm->asyncResult.load());
      out[i].state = static_cast<int>(comm->state.load());
      out[i].abortFlag = comm->abortFlag.load();
    }
  }
  for (size_t i = 0; i < recs.size(); ++i) {
    RasComm& r = *recs[i];
    RasCommSnapshot& s = out[i];
    static_cast<RasIdentity&>(s) = r;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      static_cast<RasActivity&>(s) = r;
    }
    s.waits = rasWaitsOf(r.waitKey);
  }
  return out;
}

void rasStateLockForFork() { table().mutex.lock(); }

void rasStateUnlockAfterFork(bool inChild) {
  if (inChild)
    tablePtr() = new Table;  // the parent's communicators cannot be used here; its table is abandoned
  else
    table().mutex.unlock();
}

}  // namespace accl
