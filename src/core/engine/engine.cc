// CommEngine construction (facts, backend, channels, tuner), lazy ring/tree connection and the
// plan-connect walk every backend shares.
#include "core/engine/engine.h"

#include <algorithm>
#include <vector>

#include "core/comm/comm.h"
#include "core/engine/tree_builder.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

ncclResult_t createEngineTuner(ncclComm* comm, CommEngine* e);  // engine_tuner.cc

namespace {

// Whether two ranks run on one GPU: same host, same PCI bus id.
bool sameDevice(const PeerInfo& a, const PeerInfo& b) { return a.hostHash == b.hostHash && a.busId == b.busId; }

// Ranks of the communicator running on `who`'s GPU.
int ranksOnDeviceOf(const ncclComm& comm, const PeerInfo& who) {
  int n = 0;
  for (const PeerInfo& p : comm.peers) n += sameDevice(p, who);
  return std::max(n, 1);
}

// Processes with ranks of the communicator on this rank's GPU (this one included).
int processesOnMyDevice(const ncclComm& comm) {
  const PeerInfo& me = comm.peers[comm.rank];
  std::vector<uint64_t> pids;
  for (const PeerInfo& p : comm.peers)
    if (sameDevice(p, me) && std::find(pids.begin(), pids.end(), p.pidHash) == pids.end()) pids.push_back(p.pidHash);
  return std::max<int>(static_cast<int>(pids.size()), 1);
}

// The most ranks of the communicator on one GPU: the same on every rank.
int ranksOnBusiestDevice(const ncclComm& comm) {
  int most = 1;
  for (const PeerInfo& p : comm.peers) most = std::max(most, ranksOnDeviceOf(comm, p));
  return most;
}

CommFacts factsOf(const ncclComm& comm) {
  CommFacts f;
  f.comm = &comm;
  f.rank = comm.rank;
  f.nRanks = comm.nranks;
  f.localRanks = comm.layout.localRanks;
  f.nNodes = comm.layout.nNodes;
  f.cudaDev = comm.cudaDev;
  f.ranksOnMyDevice = comm.peers.empty() ? 1 : ranksOnDeviceOf(comm, comm.peers[comm.rank]);
  f.ranksOnBusiestDevice = comm.peers.empty() ? 1 : ranksOnBusiestDevice(comm);
  f.processesOnMyDevice = comm.peers.empty() ? 1 : processesOnMyDevice(comm);
  f.minCTAs = comm.config.base.minCTAs;
  f.maxCTAs = comm.config.base.maxCTAs;
  f.abortFlag = &comm.abortFlag;
  return f;
}

// The profiler plugin's context for a new communicator (null: none configured or it failed).
std::unique_ptr<prof::CommProfiler> createCommProfiler(const ncclComm& comm) {
  prof::PluginCommInfo info;
  info.commId = comm.commHash;
  info.commName = comm.config.commName.c_str();
  info.nNodes = comm.layout.nNodes;
  info.nRanks = comm.nranks;
  info.rank = comm.rank;
  return prof::CommProfiler::create(paramStr("NCCL_PROFILER_PLUGIN"), paramStr("NCCL_PROFILE_EVENT_MASK"), info);
}

// The peers this rank exchanges with in a one-round all-reduce: every other rank.
std::vector<int> everyOtherRank(const ncclComm& comm) {
  std::vector<int> peers;
  for (int r = 0; r < comm.nranks; ++r)
    if (r != comm.rank) peers.push_back(r);
  return peers;
}

}  // namespace

CommEngine::CommEngine(ncclComm* c) : comm(c), redOps(c) {}

ncclResult_t CommEngine::create(ncclComm* comm, std::unique_ptr<CommEngine>* out) {
  auto engine = std::make_unique<CommEngine>(comm);
  ACCL_CHECK(algoProtoFilterFromEnv(&engine->filter));
  engine->facts = factsOf(*comm);
  engine->profiler = createCommProfiler(*comm);
  engine->facts.profiler = engine->profiler.get();
  engine->conns.profiler = engine->profiler.get();
  ACCL_CHECK(createBackend(comm->backend, EngineView(engine.get()), &engine->backend));
  CommBackend& backend = *engine->backend;
  engine->layout = backend.fifoLayout();
  const int n = std::clamp(backend.channelCount(engine->facts), 1, kMaxChannels);
  engine->nChannels = n;
  engine->channels.resize(n);
  for (int c = 0; c < n; ++c) {
    ChannelPeers& ch = engine->channels[c];
    ch.ringRanks.resize(comm->nranks);
    for (int r = 0; r < comm->nranks; ++r) ch.ringRanks[r] = r;
    ch.ringIndex = comm->rank;
    ch.tree = buildTreeView(comm->layout.nodeOfRank, comm->rank, c % 2);
  }
  ACCL_CHECK(backend.start());
  if (comm->rank == 0)
    ACCL_INFO(ACCL_LOG_INIT, "comm %p nRanks %d nNodes %d: %d channel(s), ring order = rank order, %s backend",
              (void*)comm, comm->nranks, comm->layout.nNodes, n, backend.name());
  ACCL_CHECK(createEngineTuner(comm, engine.get()));
  const TreeView& t = engine->channels[0].tree;
  ACCL_INFO(ACCL_LOG_INIT, "Trees [0] %d/%d/%d->%d->%d", t.down[0], t.down[1], t.down[2], comm->rank, t.up);
  *out = std::move(engine);
  return ncclSuccess;
}

void CommEngine::attachHealth(std::shared_ptr<const CommHealth> h) {
  health = h;
  backend->attachHealth(std::move(h), &collOpCount, comm->rank);
}

ncclResult_t CommEngine::ensureRing(int channel) {
  ChannelPeers& ch = channels[channel];
  if (ch.ringConnected || comm->nranks == 1) return ncclSuccess;
  int n = comm->nranks;
  int next = ch.ringRanks[(ch.ringIndex + 1) % n];
  int prev = ch.ringRanks[(ch.ringIndex + n - 1) % n];
  ACCL_CHECK(conns.connect(comm, channel, layout, {next}, {prev}));
  ch.ringConnected = true;
  return ncclSuccess;
}

ncclResult_t CommEngine::ensureTree(int channel) {
  ChannelPeers& ch = channels[channel];
  if (ch.treeConnected || comm->nranks == 1) return ncclSuccess;
  std::vector<int> peers;
  if (ch.tree.up >= 0) peers.push_back(ch.tree.up);
  for (int d : ch.tree.down)
    if (d >= 0) peers.push_back(d);
  // Data flows both ways on every tree edge (reduce up, broadcast down).
  ACCL_CHECK(conns.connect(comm, channel, layout, peers, peers));
  ch.treeConnected = true;
  return ncclSuccess;
}

void CommEngine::releaseConnections(bool stopRunning) {
  if (backend) backend->releaseConnections(stopRunning);
  conns.releaseAll();
  for (ChannelPeers& ch : channels) ch.ringConnected = ch.treeConnected = ch.allConnected = false;
}

ncclResult_t CommEngine::connectPlan(const Plan& plan) {
  // A peer failure interrupts connection setup through the abort flag: report the failure itself.
  const PlanItem* first = plan.channels.empty() || plan.channels[0].empty() ? nullptr : &plan.channels[0][0];
  const char* what = collApiName(first && first->isColl ? first->coll.func : kFuncSendRecv, "ncclSend/ncclRecv");
  // A failure recorded before the communicator was Ready did not raise the abort flag: check first.
  if (health && health->failed()) return backend->peerFailureOr(what, ncclRemoteError);
  for (int c = 0; c < plan.nChannelsUsed; ++c) {
    ChannelLinks links;
    for (const PlanItem& item : plan.channels[c]) {
      if (item.isColl && item.oneShot) {
        if (channels[c].allConnected) continue;
        const std::vector<int> peers = everyOtherRank(*comm);
        ACCL_CHECK(backend->peerFailureOr(what, conns.connect(comm, c, layout, peers, peers)));
        channels[c].allConnected = true;
        continue;
      }
      if (item.isColl) {
        (item.coll.algo == kAlgoTree ? links.tree : links.ring) = true;
        continue;
      }
      for (const P2pWork& w : item.p2p) (w.isSend ? links.sendPeers : links.recvPeers).push_back(w.peer);
    }
    if (links.ring) ACCL_CHECK(backend->peerFailureOr(what, ensureRing(c)));
    if (links.tree) ACCL_CHECK(backend->peerFailureOr(what, ensureTree(c)));
    if (!links.sendPeers.empty() || !links.recvPeers.empty())
      ACCL_CHECK(backend->peerFailureOr(what, conns.connect(comm, c, layout, links.sendPeers, links.recvPeers)));
    ACCL_CHECK(backend->publishConnections(c, links));
  }
  return ncclSuccess;
}

}  // namespace accl
