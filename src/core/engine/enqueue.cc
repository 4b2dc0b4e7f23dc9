// Enqueue: argument checks, the per-thread task list of a group, plan construction, and the
// hand-over of each communicator's plan to its backend.
#include "core/engine/enqueue.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "device/common/chunk_loop.h"
#include "core/engine/coll_config.h"
#include "core/comm/comm.h"
#include "core/comm/comm_memory.h"
#include "core/engine/engine.h"
#include "core/engine/enqueue_profile.h"
#include "core/engine/group.h"
#include "core/engine/launch_outcome.h"
#include "core/engine/launch_record.h"
#include "core/engine/lone_coll.h"
#include "core/engine/plan.h"
#include "device/common/dtypes.h"
#include "util/check.h"

namespace accl {
namespace {

struct Task {
  bool isColl;
  CollCall coll;
  P2pCall p2p;
  DevRedOp op;
  CollCallConfig cfg;  // per-call settings of a nccl*Config collective (cfg.given)
  // Profiler handles (enqueue_profile.h), null without a plugin: the API call's event and the
  // operation's Coll / P2p event of the launch.
  void* apiEvent = nullptr;
  void* taskEvent = nullptr;
};

struct CommTasks {
  ncclComm* comm;
  std::vector<Task> tasks;
  // Set for an explicit group: the object survives a destroy or abort before the group ends, so
  // the group end can tell (core/comm/comm_lifetime.h). An implicit group runs inside the call, which
  // holds the communicator.
  std::unique_ptr<CommPin> pin;
  // The communicator's profiler, and its GroupApi event for this group (null: none).
  prof::CommProfiler* prof = nullptr;
  void* groupApiEvent = nullptr;
};

// This thread's pending tasks: entries [0, count) of `list` are live; the rest keep their
// capacity for the next group. One thread-local object: every access to a thread_local of a
// shared library is a call (docs/latency.md).
struct PendingTasks {
  std::vector<CommTasks> list;
  size_t count = 0;
};
thread_local PendingTasks tPending;

// Appends `t` to the communicator's entry (made on its first task of the group); returns the entry.
// `explicitGroup`: the call is inside the user's ncclGroupStart (pin the communicator).
CommTasks& addTask(ncclComm* comm, const Task& t, bool explicitGroup) {
  for (size_t i = 0; i < tPending.count; ++i)
    if (tPending.list[i].comm == comm) {
      tPending.list[i].tasks.push_back(t);
      return tPending.list[i];
    }
  if (tPending.count == tPending.list.size()) tPending.list.emplace_back();
  CommTasks& ct = tPending.list[tPending.count++];
  ct.comm = comm;
  ct.tasks.clear();
  ct.tasks.push_back(t);
  if (explicitGroup) ct.pin = std::make_unique<CommPin>(comm);
  ct.prof = comm->engine->profiler.get();
  // NCCL's depth counts the call's own implicit level: 1 for a lone call, 2 inside one group.
  ct.groupApiEvent = ct.prof ? profStartGroupApi(*ct.prof, groupDepth() + (explicitGroup ? 1 : 0)) : nullptr;
  return ct;
}

// Stops the GroupApi events of the first `count` entries (their group is over). Called while the
// group's communicators are still held; one destroyed inside the group has no engine any more,
// and its profiler has finalized already.
void endGroupApiEvents(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    CommTasks& ct = tPending.list[i];
    if (ct.groupApiEvent && ct.comm->engine) ct.prof->stop(ct.groupApiEvent);
    ct.groupApiEvent = nullptr;
  }
}

// Ends the first `count` entries' pins (the group is over).
void unpinPending(size_t count) {
  for (size_t i = 0; i < count; ++i) tPending.list[i].pin.reset();
}

// Below this many bytes per channel an operation stays on fewer channels.
constexpr size_t kMinBytesPerChannel = 64 << 10;

int channelsFor(const CommEngine& e, const P2pCall& p) {
  size_t want = p.count * dtypeSize(p.type) / kMinBytesPerChannel;
  if (want < 1) want = 1;
  CollCallConfig bounds;
  bounds.minChannels = p.minChannels;
  bounds.maxChannels = p.maxChannels;
  return boundChannels(static_cast<int>(std::min<size_t>(want, kMaxChannels)), bounds, e.nChannels);
}

ncclResult_t checkColl(ncclComm* comm, const CollCall& c, DevRedOp* op) {
  ACCL_CHECK(checkCommReady(c.name, comm));
  ACCL_CHECK(checkNotSuspended(c.name, comm));
  ACCL_CHECK(checkType(c.name, c.type));
  const bool blocks = c.func == kFuncAllGather || c.func == kFuncReduceScatter;
  ACCL_CHECK(checkCount(c.name, c.count, blocks ? comm->nranks : 1, c.type));
  const bool rooted = c.func == kFuncBroadcast || c.func == kFuncReduce;
  if (rooted && (c.root < 0 || c.root >= comm->nranks))
    return fail(ncclInvalidArgument, "%s: root %d is out of range [0, %d)", c.name, c.root, comm->nranks);
  const bool reduces = c.func == kFuncReduce || c.func == kFuncReduceScatter || c.func == kFuncAllReduce;
  *op = DevRedOp{};
  if (reduces) ACCL_CHECK(comm->engine->redOps.resolve(c.name, c.op, c.type, comm->nranks, op));
  if (c.count == 0) return ncclSuccess;
  // Which buffers this rank touches: the send buffer unless it only receives (non-root
  // broadcast), the receive buffer unless it only sends (non-root reduce).
  const bool needSend = !(c.func == kFuncBroadcast && comm->rank != c.root);
  const bool needRecv = !(c.func == kFuncReduce && comm->rank != c.root);
  if (needSend && c.sendbuff == nullptr)
    return fail(ncclInvalidArgument, "%s: sendbuff is NULL with count %zu", c.name, c.count);
  if (needRecv && c.recvbuff == nullptr)
    return fail(ncclInvalidArgument, "%s: recvbuff is NULL with count %zu", c.name, c.count);
  return ncclSuccess;
}

// Runs a task now (outside a group) or adds it to the group. With a profiler, the call is an
// API event under the group's GroupApi event, stopped when the call returns.
ncclResult_t submit(ncclComm* comm, const Task& t, const char* name) {
  const bool implicit = !inGroup();
  if (implicit) groupStart();
  CommTasks& ct = addTask(comm, t, /*explicitGroup=*/!implicit);
  prof::CommProfiler* prof = ct.prof;
  void* api = nullptr;
  if (prof) {
    Task& added = ct.tasks.back();
    const bool captured =
        comm->engine->backend->streamCapturing(added.isColl ? added.coll.stream : added.p2p.stream);
    api = added.isColl ? profStartCollApi(*prof, ct.groupApiEvent, added.coll, captured, added.cfg.profilerTag)
                       : profStartP2pApi(*prof, ct.groupApiEvent, added.p2p, captured);
    added.apiEvent = api;
  }
  ncclResult_t res = implicit ? groupEnd(name) : ncclSuccess;
  if (api) prof->stop(api);
  return res;
}

// Adds one collective's per-channel work items to the plan.
ncclResult_t planColl(ncclComm* comm, Task& t, const LaunchEvents& events, Plan* plan) {
  CommEngine& e = *comm->engine;
  const CollCall& c = t.coll;
  const size_t elem = dtypeSize(c.type);
  const size_t bytes = collBytes(comm, c);
  // A per-call selection was resolved when the call was queued; the others go through the
  // engine's choice cache.
  TunerChoice choice;
  if (t.cfg.restrictsAlgo)
    choice = t.cfg.choice;
  else
    ACCL_CHECK(e.choose(c.func, bytes, &choice));
  const bool oneShot = choice.algo == kAlgoOneShot;
  // The one-round all-reduce exchanges whole vectors: always one channel.
  const int nCh = oneShot ? 1 : boundChannels(choice.nChannels, t.cfg, e.nChannels);
  const uint64_t seq = noteCollPlanned(comm, c, choice, nCh, t.cfg.given, t.cfg.restrictsAlgo, t.cfg.profilerTag);
  if (events.prof)
    t.taskEvent = profStartColl(events, t.apiEvent, c, static_cast<uint32_t>(c.op), choice, nCh, seq, bytes,
                                t.cfg.profilerTag);
  const size_t chunk = e.backend->chunkElems(static_cast<ProtoId>(choice.proto), elem, bytes / nCh / comm->nranks);
  for (int ch = 0; ch < nCh; ++ch) {
    PlanItem item;
    item.coll = collWorkFor(c, t.op, choice, ch, nCh, chunk);
    item.oneShot = oneShot;
    item.profilerTag = t.cfg.profilerTag;
    item.profEvent = t.taskEvent;
    plan->channels[ch].push_back(item);
  }
  if (nCh > plan->nChannelsUsed) plan->nChannelsUsed = nCh;
  return ncclSuccess;
}

// Sends and receives to this rank itself are matched in call order and become the plan's local
// copies: the backend runs them with the launch (on its stream, after the stream's earlier work).
ncclResult_t matchSelfTransfers(ncclComm* comm, const std::vector<Task*>& batch, Plan* plan) {
  std::vector<const P2pCall*> sends, recvs;
  for (const Task* t : batch)
    if (t->p2p.peer == comm->rank) (t->p2p.isSend ? sends : recvs).push_back(&t->p2p);
  if (sends.size() != recvs.size())
    return fail(ncclInvalidUsage, "ncclGroupEnd: rank %d posted %zu send(s) to itself but %zu receive(s) from itself",
                comm->rank, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    size_t sb = sends[i]->count * dtypeSize(sends[i]->type), rb = recvs[i]->count * dtypeSize(recvs[i]->type);
    if (sb != rb)
      return fail(ncclInvalidUsage, "ncclSend/ncclRecv to self on rank %d: sizes differ (%zu vs %zu bytes)",
                  comm->rank, sb, rb);
    if (sb && sends[i]->sendbuff != recvs[i]->recvbuff)
      plan->selfCopies.push_back(LocalCopy{recvs[i]->recvbuff, sends[i]->sendbuff, sb});
  }
  return ncclSuccess;
}

// Adds a batch of consecutive send/recv tasks to the plan: each transfer is cut into the same
// per-channel pieces on both sides (both know the count and type).
ncclResult_t planP2p(ncclComm* comm, const std::vector<Task*>& batch, const LaunchEvents& events, Plan* plan) {
  ACCL_CHECK(matchSelfTransfers(comm, batch, plan));
  CommEngine& e = *comm->engine;
  std::vector<std::vector<P2pWork>> perChannel(e.nChannels);
  std::vector<std::vector<void*>> perChannelEvents(events.prof ? e.nChannels : 0);
  for (Task* t : batch) {
    const P2pCall& p = t->p2p;
    const int nCh = p.peer == comm->rank ? 0 : channelsFor(e, p);
    if (events.prof) t->taskEvent = profStartP2p(events, t->apiEvent, p, nCh);
    if (p.peer == comm->rank) continue;
    const size_t elem = dtypeSize(p.type);
    for (int ch = 0; ch < nCh; ++ch) {
      P2pWork w{};
      w.isSend = p.isSend;
      w.peer = p.peer;
      w.proto = kProtoSimple;
      w.type = p.type;
      w.sendbuff = p.sendbuff;
      w.recvbuff = p.recvbuff;
      w.chanOffset = p.count * ch / nCh;
      w.chanCount = p.count * (ch + 1) / nCh - w.chanOffset;
      w.chunkElems = e.backend->chunkElems(kProtoSimple, elem, w.chanCount * elem);
      perChannel[ch].push_back(w);
      if (events.prof) perChannelEvents[ch].push_back(t->taskEvent);
    }
    if (nCh > plan->nChannelsUsed) plan->nChannelsUsed = nCh;
  }
  for (int ch = 0; ch < e.nChannels; ++ch) {
    if (perChannel[ch].empty()) continue;
    PlanItem item;
    item.isColl = false;
    item.p2p = std::move(perChannel[ch]);
    if (events.prof) item.p2pEvents = std::move(perChannelEvents[ch]);
    plan->channels[ch].push_back(std::move(item));
  }
  return ncclSuccess;
}

// Fills `plan` (fresh from the pool, empty) with the tasks' work items and streams.
ncclResult_t buildPlan(ncclComm* comm, std::vector<Task>& tasks, const LaunchEvents& events, Plan* plan) {
  std::vector<Task*> batch;
  for (Task& t : tasks) {
    plan->addStream(t.isColl ? t.coll.stream : t.p2p.stream);
    if (!t.isColl) {
      batch.push_back(&t);
      continue;
    }
    if (!batch.empty()) ACCL_CHECK(planP2p(comm, batch, events, plan));
    batch.clear();
    ACCL_CHECK(planColl(comm, t, events, plan));
  }
  if (!batch.empty()) ACCL_CHECK(planP2p(comm, batch, events, plan));
  return ncclSuccess;
}

// Stops the launch's Coll / P2p events (handed to the backend, or failed) and its Group event.
void stopLaunchEvents(const LaunchEvents& events, std::vector<Task>& tasks) {
  if (!events.prof) return;
  for (Task& t : tasks) {
    events.prof->stop(t.taskEvent);
    t.taskEvent = nullptr;
  }
  events.prof->stop(events.group);
}

// Connects the peers of this launch's own plan and has the backend launch it. The backend gives
// the plan back to the pool when the launch completes; a plan that never starts goes back here.
ncclResult_t connectAndLaunch(CommEngine& e, std::unique_ptr<Plan> plan, const LaunchEvents& events) {
  e.plans.count(*plan);
  struct Prepare {  // CommBackend::beginPrepare/endPrepare around the whole launch
    CommBackend& b;
    int saved;
    explicit Prepare(CommBackend& backend) : b(backend), saved(backend.beginPrepare()) {}
    ~Prepare() { b.endPrepare(saved); }
  } prepare(*e.backend);
  ncclResult_t res = e.connectPlan(*plan);
  if (res == ncclSuccess) {
    void* launchEvent = events.prof ? profStartKernelLaunch(*events.prof, events.groupApi, plan->streams[0]) : nullptr;
    res = e.backend->launch(std::move(plan));
    if (launchEvent) events.prof->stop(launchEvent);
    return res;
  }
  e.plans.recycle(std::move(plan));
  return res;
}

// Runs one communicator's tasks; the caller holds the communicator.
ncclResult_t runComm(ncclComm* comm, CommTasks& ct) {
  std::vector<Task>& tasks = ct.tasks;
  const char* name = tasks.front().isColl ? tasks.front().coll.name : tasks.front().p2p.name;
  ACCL_CHECK(checkStillRunnable(comm, name));
  // No suspend while the plan is built and run; none of this runs on a suspended comm.
  GateScope gate(comm->engine->gate, name);
  ACCL_CHECK(gate.result());
  // accl-ras's current operation and sequence numbers; ACCL_CHECK_COLLECTIVES (core/engine/launch_record.h).
  LaunchRecord record(comm);
  for (const Task& t : tasks) t.isColl ? record.addColl(t.coll) : record.addP2p(t.p2p);
  ACCL_CHECK(record.start());
  CommEngine& e = *comm->engine;
  std::unique_ptr<Plan> plan = e.plans.acquire(e.nChannels);
  LaunchEvents events;
  if (ct.prof) {
    events.prof = ct.prof;
    events.groupApi = ct.groupApiEvent;
    ct.prof->record(ct.groupApiEvent, prof::kGroupEndApiStart);
    events.group = profStartGroup(*ct.prof);
  }
  ncclResult_t built = buildPlan(comm, tasks, events, plan.get());
  if (built != ncclSuccess || plan->empty()) {
    e.plans.recycle(std::move(plan));
    stopLaunchEvents(events, tasks);
    return built;
  }
  ncclResult_t res = connectAndLaunch(e, std::move(plan), events);
  stopLaunchEvents(events, tasks);
  return settleLaunch(comm, name, res);
}

// Holds every communicator of the group for its run. A communicator destroyed or aborted inside
// the group fails the whole group (its peers' operations in the same group would wait for it).
ncclResult_t holdGroupComms(size_t count, std::vector<CommHold>* holds) {
  if (count == 1 && threadHolds(tPending.list[0].comm)) return ncclSuccess;  // a lone call: nothing to allocate
  holds->resize(count);
  for (size_t i = 0; i < count; ++i) {
    ncclComm* comm = tPending.list[i].comm;
    if (threadHolds(comm)) continue;  // the implicit group of this call
    const Task& first = tPending.list[i].tasks.front();
    const char* name = first.isColl ? first.coll.name : first.p2p.name;
    ncclResult_t res = (*holds)[i].acquire(name, comm);
    if (res != ncclSuccess)
      return fail(ncclInvalidUsage,
                  "ncclGroupEnd: comm %p was destroyed or aborted inside the group; the group's operations were "
                  "dropped (%s)",
                  static_cast<void*>(comm), name);
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t checkType(const char* call, ncclDataType_t type) {
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= ncclNumTypes)
    return fail(ncclInvalidArgument, "%s: datatype %d is invalid (must be in [0, %d))", call, static_cast<int>(type),
                static_cast<int>(ncclNumTypes));
  return ncclSuccess;
}

ncclResult_t checkCount(const char* call, size_t count, size_t multiplier, ncclDataType_t type) {
  size_t elem = dtypeSize(type);
  if (count != 0 && (count > SIZE_MAX / elem / multiplier))
    return fail(ncclInvalidArgument, "%s: count %zu of %zu-byte elements (x%zu) overflows the address space", call,
                count, elem, multiplier);
  return ncclSuccess;
}

ncclResult_t enqueueColl(ncclComm* comm, const CollCall& call) {
  DevRedOp op;
  ncclResult_t res = checkColl(comm, call, &op);
  // A small call outside a group runs at once, before any task is built (lone_coll.h).
  if (res == ncclSuccess && call.config == nullptr && runLoneColl(comm, call, op, &res)) return res;
  Task t{};
  t.isColl = true;
  t.coll = call;
  t.op = op;
  if (res == ncclSuccess && call.config != nullptr)
    res = resolveCollConfig(call.name, call.func, collBytes(comm, call), call.config, comm, &t.cfg);
  t.coll.config = nullptr;  // read once, here: the caller may reuse its struct before the group ends
  if (res != ncclSuccess) {
    recordGroupError(res);
    return res;
  }
  return submit(comm, t, call.name);
}

ncclResult_t enqueueP2p(ncclComm* comm, const P2pCall& call) {
  ncclResult_t res = checkCommReady(call.name, comm);
  if (res == ncclSuccess) res = checkNotSuspended(call.name, comm);
  if (res == ncclSuccess) res = checkType(call.name, call.type);
  if (res == ncclSuccess) res = checkCount(call.name, call.count, 1, call.type);
  if (res == ncclSuccess && (call.peer < 0 || call.peer >= comm->nranks))
    res = fail(ncclInvalidArgument, "%s: peer %d is out of range [0, %d)", call.name, call.peer, comm->nranks);
  if (res == ncclSuccess && call.count > 0 && (call.isSend ? call.sendbuff == nullptr : call.recvbuff == nullptr))
    res = fail(ncclInvalidArgument, "%s: %s is NULL with count %zu", call.name, call.isSend ? "sendbuff" : "recvbuff",
               call.count);
  if (res != ncclSuccess) {
    recordGroupError(res);
    return res;
  }
  Task t{};
  t.isColl = false;
  t.p2p = call;
  return submit(comm, t, call.name);
}

void discardGroupTasks() {
  endGroupApiEvents(tPending.count);
  unpinPending(tPending.count);
  tPending.count = 0;
}

bool hasQueuedTasks(const ncclComm* comm) {
  for (size_t i = 0; i < tPending.count; ++i)
    if (tPending.list[i].comm == comm && !tPending.list[i].tasks.empty()) return true;
  return false;
}

ncclResult_t estimateGroupTasksUs(float* us) {
  float longest = 0;
  std::vector<CommHold> holds;
  ACCL_CHECK(holdGroupComms(tPending.count, &holds));
  for (size_t i = 0; i < tPending.count; ++i) {
    ncclComm* comm = tPending.list[i].comm;
    float sum = 0;
    for (const Task& t : tPending.list[i].tasks) {
      TunerChoice choice;
      if (t.isColl) {
        if (t.cfg.restrictsAlgo)
          choice = t.cfg.choice;
        else
          ACCL_CHECK(comm->engine->choose(t.coll.func, collBytes(comm, t.coll), &choice));
      } else {
        if (t.p2p.peer == comm->rank) continue;
        ACCL_CHECK(comm->engine->choose(kFuncSendRecv, t.p2p.count * dtypeSize(t.p2p.type), &choice));
      }
      sum += choice.predictedUs;
    }
    longest = std::max(longest, sum);
  }
  *us = longest;
  return ncclSuccess;
}

// Two ranks of one communicator in one group, enqueued on one stream by an asynchronous backend
// (several ranks per GPU): the first kernel waits for the second, which the stream holds back
// until the first ends — a deadlock on any GPU. Refused before anything is launched.
ncclResult_t checkStreamsOfOneCommunicator(size_t count) {
  auto streamOf = [](const Task& t) { return t.isColl ? t.coll.stream : t.p2p.stream; };
  for (size_t i = 0; i < count; ++i) {
    const ncclComm* a = tPending.list[i].comm;
    if (!a->engine || a->engine->backend->launchBlocks()) continue;
    for (size_t j = i + 1; j < count; ++j) {
      const ncclComm* b = tPending.list[j].comm;
      if (b->commHash != a->commHash || b->rank == a->rank) continue;
      for (const Task& ta : tPending.list[i].tasks)
        for (const Task& tb : tPending.list[j].tasks)
          if (streamOf(ta) == streamOf(tb))
            return fail(ncclInvalidUsage,
                        "ncclGroupEnd: ranks %d and %d of one communicator (comm %p and %p) enqueue on the same stream "
                        "%p: their kernels must run at the same time, and on one stream the later one waits for the "
                        "earlier, which waits for it; give each rank its own stream",
                        a->rank, b->rank, static_cast<const void*>(a), static_cast<const void*>(b),
                        static_cast<const void*>(streamOf(ta)));
    }
  }
  return ncclSuccess;
}

ncclResult_t launchGroupTasks() {
  const size_t count = tPending.count;
  tPending.count = 0;
  if (count == 0) return ncclSuccess;
  std::vector<CommHold> holds;
  ncclResult_t held = holdGroupComms(count, &holds);
  if (held == ncclSuccess && count > 1) held = checkStreamsOfOneCommunicator(count);
  if (held != ncclSuccess) {
    endGroupApiEvents(count);
    holds.clear();
    unpinPending(count);
    return held;
  }
  ncclResult_t result = ncclSuccess;
  if (count == 1) {
    result = runComm(tPending.list[0].comm, tPending.list[0]);
  } else {
    // Several communicators from one thread (e.g. one thread driving every rank): each may wait
    // on the others — connecting a plan is a handshake with the peers, and a blocking backend's
    // launch (CommBackend::launchBlocks) runs the whole plan — so each runs on its own thread.
    // (An asynchronous backend's launch returns once enqueued; its thread ends with it.)
    std::vector<ncclResult_t> results(count, ncclSuccess);
    std::vector<CommTasks>& pending = tPending.list;  // this thread's list (tPending is thread-local)
    std::vector<std::thread> threads;
    for (size_t i = 0; i < count; ++i)
      threads.emplace_back([&, i] { results[i] = runComm(pending[i].comm, pending[i]); });
    for (std::thread& th : threads) th.join();
    for (ncclResult_t r : results)
      if (r != ncclSuccess && result == ncclSuccess) result = r;
  }
  endGroupApiEvents(count);
  holds.clear();
  unpinPending(count);
  return result;
}

}  // namespace accl
