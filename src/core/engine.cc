// CommEngine construction (backend, channels, tuner) and lazy ring/tree connection.
#include "core/engine.h"

#include <algorithm>

#include "core/comm.h"
#include "core/tree_builder.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {

ncclResult_t createEngineTuner(ncclComm* comm, CommEngine* e);  // engine_tuner.cc

CommEngine::CommEngine(ncclComm* c) : comm(c), redOps(c) {}

ncclResult_t CommEngine::create(ncclComm* comm, std::unique_ptr<CommEngine>* out) {
  auto engine = std::make_unique<CommEngine>(comm);
  ACCL_CHECK(algoProtoFilterFromEnv(&engine->filter));
  ACCL_CHECK(createBackend(comm, engine.get(), &engine->backend));
  CommBackend& backend = *engine->backend;
  engine->layout = backend.fifoLayout();
  const int n = std::clamp(backend.channelCount(*comm), 1, kMaxChannels);
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

}  // namespace accl
