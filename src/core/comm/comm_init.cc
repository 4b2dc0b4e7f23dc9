// The init job (bootstrap + peer exchange + node layout) and the split/shrink rendezvous.
// Split and shrink build a child with a fresh bootstrap: the child's first rank creates a
// unique id and hands it to the other members over the parent's bootstrap, after which the
// child initializes exactly like ncclCommInitRank.
#include "core/comm/comm_init.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include "activity/ras_comms.h"
#include "core/engine/engine.h"
#include "core/engine/group.h"
#include "core/liveness/liveness.h"
#include "core/bootstrap/unique_id.h"
#include "device/device_probe.h"
#include "util/check.h"
#include "util/last_error.h"
#include "util/log.h"
#include "util/host_identity.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr int kSplitTagBase = 1 << 29;
constexpr int kShrinkTagBase = (1 << 29) + (1 << 28);

uint64_t hashString(const std::string& s, uint64_t seed) { return fnv1a64(s.data(), s.size(), seed); }

uint64_t pidHash() {
  char ns[256] = {};
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
  std::string id = std::to_string(getpid()) + (n > 0 ? std::string(ns, n) : std::string());
  return hashString(id, 0x84222325cbf29ce4ull);
}

NodeLayout computeLayout(const std::vector<PeerInfo>& peers, int rank) {
  NodeLayout l;
  std::map<uint64_t, int> nodeOfHash;  // numbered in order of first appearance = lowest rank
  l.nodeOfRank.resize(peers.size());
  for (size_t r = 0; r < peers.size(); ++r) {
    auto it = nodeOfHash.find(peers[r].hostHash);
    if (it == nodeOfHash.end()) it = nodeOfHash.emplace(peers[r].hostHash, (int)nodeOfHash.size()).first;
    l.nodeOfRank[r] = it->second;
  }
  l.nNodes = (int)nodeOfHash.size();
  l.node = l.nodeOfRank[rank];
  for (size_t r = 0; r < peers.size(); ++r) {
    if (l.nodeOfRank[r] != l.node) continue;
    if ((int)r < rank) l.localRank++;
    l.localRanks++;
  }
  return l;
}

// Lists a communicator that finished its init in the activity records (accl-ras shows it from now
// on), with a copy of its identity: the records never read the communicator.
void addActivityRecord(ncclComm* comm) {
  RasIdentity id;
  id.commHash = comm->commHash;
  id.rank = comm->rank;
  id.nranks = comm->nranks;
  id.cudaDev = comm->cudaDev;
  id.name = comm->config.commName;
  id.checkCollectives = paramInt("ACCL_CHECK_COLLECTIVES") != 0;
  id.peers.resize(comm->peers.size());
  if (comm->rank >= 0 && comm->rank < static_cast<int>(comm->peers.size())) {
    const PeerInfo& me = comm->peers[comm->rank];
    for (size_t r = 0; r < comm->peers.size(); ++r) {
      id.peers[r].pid = comm->peers[r].pid;
      id.peers[r].sameHost = comm->peers[r].hostHash == me.hostHash;
      id.peers[r].sameProcess = comm->peers[r].pidHash == me.pidHash;
    }
  }
  rasAddComm(comm, &comm->abortFlag, std::move(id));  // its waits carry the abort flag (activity/ras_waits.h)
  comm->engine->activity = rasFindComm(comm);
}

// Runs on the job thread: bootstrap, exchange PeerInfo, check agreement, derive the layout.
ncclResult_t initJobSteps(ncclComm* comm, const std::vector<ncclUniqueId>& ids) {
  BootstrapOptions opts;
  opts.rank = comm->rank;
  opts.nranks = comm->nranks;
  opts.abortFlag = &comm->abortFlag;
  opts.timeoutMs = paramInt("ACCL_BOOTSTRAP_TIMEOUT_MS");
  ACCL_CHECK(Bootstrap::create(ids.data(), (int)ids.size(), opts, &comm->bootstrap));

  comm->peers.assign(comm->nranks, PeerInfo{});
  PeerInfo& me = comm->peers[comm->rank];
  me.rank = comm->rank;
  me.version = NCCL_VERSION_CODE;
  me.cudaDev = comm->cudaDev;
  me.backend = (int)comm->backend;
  me.busId = comm->backend == Backend::Cuda ? cudaDeviceBusId(comm->cudaDev) : -1;
  // The CUDA backend's kernels reach only device or device-mapped memory: its connections must
  // come from the GPU transports (transports/p2p/cuda_p2p, transports/shm/cuda_shm).
  me.gpuFifos = comm->backend == Backend::Cuda ? 1 : 0;
  me.hostHash = hostHash();
  me.pidHash = pidHash();
  me.pid = getpid();
  me.place = processPlace();
  ACCL_CHECK(comm->bootstrap->allGather(comm->peers.data(), sizeof(PeerInfo)));
  for (int r = 0; r < comm->nranks; ++r) {
    const PeerInfo& p = comm->peers[r];
    if (p.version != NCCL_VERSION_CODE)
      return fail(ncclInvalidUsage, "ncclCommInitRank: rank %d runs library version %d, rank %d runs %d", r,
                  p.version, comm->rank, NCCL_VERSION_CODE);
    if (p.backend != (int)comm->backend)
      return fail(ncclInvalidUsage, "ncclCommInitRank: rank %d uses the %s backend but rank %d uses %s", r,
                  backendName((Backend)p.backend), comm->rank, backendName(comm->backend));
  }
  comm->layout = computeLayout(comm->peers, comm->rank);
  ACCL_CHECK(CommEngine::create(comm, &comm->engine));
  ACCL_CHECK(livenessJoin(comm));  // heartbeats with the other member processes (core/liveness/liveness.h)
  addActivityRecord(comm);         // accl-ras lists it from now on (activity/ras_comms.h)
  comm->state = CommState::Ready;
  ACCL_INFO(ACCL_LOG_INIT,
            "comm %p rank %d nranks %d cudaDev %d backend %s nodes %d localRank %d/%d commId 0x%lx%s%s - Init "
            "COMPLETE",
            (void*)comm, comm->rank, comm->nranks, comm->cudaDev, backendName(comm->backend), comm->layout.nNodes,
            comm->layout.localRank, comm->layout.localRanks, (unsigned long)comm->commHash,
            comm->config.commName.empty() ? "" : " commName ", comm->config.commName.c_str());
  return ncclSuccess;
}

}  // namespace

// Re-raises a failure from deep inside a job (bootstrap, peer checks) with the API call's name
// and the rank in front, so ncclGetLastError says which call failed and why.
ncclResult_t blame(const char* call, int rank, ncclResult_t res) {
  if (res == ncclSuccess) return res;
  std::string inner = lastErrorText();
  return fail(res, "%s: rank %d: %s", call, rank, inner.c_str());
}

// Like blame, for a step that `watched`'s abort flag can interrupt: an interrupted step is the
// user's abort (ncclInvalidUsage), not the internal error the interrupted wait reports.
static ncclResult_t blameStep(const char* call, int rank, ncclResult_t res, const ncclComm* watched) {
  if (res == ncclSuccess || res == ncclInProgress) return res;
  if (watched->abortFlag.load() == 0) return blame(call, rank, res);
  std::string inner = lastErrorText();
  return fail(ncclInvalidUsage,
              "%s: rank %d: aborted by ncclCommAbort, ncclCommDestroy or ncclCommRevoke of comm %p on another "
              "thread (%s)",
              call, rank, static_cast<const void*>(watched), inner.c_str());
}

ncclResult_t initJob(const char* call, ncclComm* comm, const std::vector<ncclUniqueId>& ids) {
  return blameStep(call, comm->rank, initJobSteps(comm, ids), comm);
}

namespace {

// Creates the child id on the leader and distributes it to `members` over the parent.
ncclResult_t shareChildId(ncclComm* parent, const std::vector<int>& members, int tag, ncclUniqueId* id) {
  if (members.front() == parent->rank) {
    ACCL_CHECK(createLocalUniqueId(id));  // never NCCL_COMM_ID: siblings would share its port
    for (size_t i = 1; i < members.size(); ++i) ACCL_CHECK(parent->bootstrap->send(members[i], tag, id, sizeof(*id)));
  } else {
    ACCL_CHECK(parent->bootstrap->recv(members.front(), tag, id, sizeof(*id)));
  }
  return ncclSuccess;
}

// Holds the parent for the part of a child job that uses it (the rendezvous and the id hand-out),
// unless this thread's API call already does: a destroy or abort of the parent on another thread
// then aborts that part and waits for it, instead of freeing the bootstrap under it.
ncclResult_t holdParent(const char* call, ncclComm* parent, CommHold* hold) {
  if (threadHolds(parent)) return ncclSuccess;
  return hold->acquire(call, parent);
}

// The child's init job once its rank and id are known; `parentHold` is released once the parent
// is no longer needed.
ncclResult_t childInit(const char* call, ncclComm* parent, ncclComm* child, const std::vector<int>& members,
                       int tag, CommHold* parentHold) {
  ncclUniqueId id;
  ACCL_CHECK(blameStep(call, parent->rank, shareChildId(parent, members, tag, &id), parent));
  parentHold->release();
  child->commHash = fnv1a64(&id, sizeof(id));
  return initJob(call, child, {id});
}

}  // namespace

ncclComm* newComm(int nranks, int rank, int cudaDev, Backend backend, const CommConfig& config) {
  ncclComm* comm = new ncclComm();
  comm->nranks = nranks;
  comm->rank = rank;
  comm->cudaDev = cudaDev;
  comm->backend = backend;
  comm->config = config;
  registerComm(comm);
  return comm;
}

ncclResult_t createComm(const char* call, ncclComm_t* newcomm, int nranks, int rank, int cudaDev,
                        const std::vector<ncclUniqueId>& ids, const CommConfig& config) {
  Backend backend;
  ACCL_CHECK(selectBackend(call, &backend));
  for (size_t i = 0; i < ids.size(); ++i) {
    UniqueIdInfo info;
    ACCL_CHECK(parseUniqueId(ids[i], &info));
    if (info.growFromRanks != 0)
      return fail(ncclInvalidArgument,
                  "%s: this ncclUniqueId was made by ncclCommGetUniqueId and only works with ncclCommGrow "
                  "(use ncclGetUniqueId for a new communicator)",
                  call);
  }
  logVersionBannerOnce();
  ncclComm* comm = newComm(nranks, rank, cudaDev, backend, config);
  comm->commHash = fnv1a64(ids.data(), sizeof(ncclUniqueId));
  // Published atomically: a watchdog thread may read the handle while this thread initializes.
  __atomic_store_n(newcomm, comm, __ATOMIC_RELEASE);
  ACCL_INFO(ACCL_LOG_INIT, "%s: comm %p rank %d nranks %d cudaDev %d commId 0x%lx - Init START", call, (void*)comm,
            rank, nranks, cudaDev, (unsigned long)comm->commHash);
  return launchCommJob(comm, [call, comm, ids] { return initJob(call, comm, ids); });
}

ncclResult_t splitComm(ncclComm* parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* userConfig) {
  const char* call = "ncclCommSplit";
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(ncclInvalidArgument, "ncclCommSplit: color %d is invalid (must be >= 0 or NCCL_SPLIT_NOCOLOR)",
                color);
  CommConfig config;
  ACCL_CHECK(resolveConfig(call, userConfig, &parent->config, &config));
  int tag = kSplitTagBase + parent->childCount++;
  *newcomm = nullptr;

  // The rendezvous: every parent rank publishes (color, key); members of one color are ordered
  // by (key, parent rank).
  struct ColorKey {
    int color, key;
  };
  auto rendezvous = [parent, color, key](std::vector<int>* members) -> ncclResult_t {
    std::vector<ColorKey> all(parent->nranks);
    all[parent->rank] = {color, key};
    ACCL_CHECK(
        blameStep("ncclCommSplit", parent->rank, parent->bootstrap->allGather(all.data(), sizeof(ColorKey)), parent));
    members->clear();
    for (int r = 0; r < parent->nranks; ++r)
      if (all[r].color == color) members->push_back(r);
    std::stable_sort(members->begin(), members->end(), [&](int a, int b) { return all[a].key < all[b].key; });
    return ncclSuccess;
  };

  // Queued jobs (a group, a nonblocking call) keep the parent object alive until they run.
  auto parentPin = std::make_shared<CommPin>(parent);
  if (color == NCCL_SPLIT_NOCOLOR) {
    // This rank takes part in the rendezvous but gets no child; the job is the parent's.
    return launchCommJob(parent, [parent, rendezvous] {
      std::vector<int> members;
      return rendezvous(&members);
    });
  }
  // The child's rank and size are only known after the rendezvous; the job fills them in.
  ncclComm* child = newComm(0, 0, parent->cudaDev, parent->backend, config);
  *newcomm = child;
  return launchCommJob(child, [parent, parentPin, child, rendezvous, tag] {
    CommHold parentHold;
    ACCL_CHECK(holdParent("ncclCommSplit", parent, &parentHold));
    std::vector<int> members;
    ACCL_CHECK(rendezvous(&members));
    child->nranks = (int)members.size();
    child->rank = (int)(std::find(members.begin(), members.end(), parent->rank) - members.begin());
    return childInit("ncclCommSplit", parent, child, members, tag, &parentHold);
  });
}

ncclResult_t shrinkComm(ncclComm* parent, const int* exclude, int excludeCount, ncclComm_t* newcomm,
                        const ncclConfig_t* userConfig, int flags) {
  const char* call = "ncclCommShrink";
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return fail(ncclInvalidArgument, "ncclCommShrink: shrinkFlags %d is not NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT",
                flags);
  if (excludeCount < 0 || excludeCount >= parent->nranks)
    return fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksCount %d is invalid for a communicator of %d ranks",
                excludeCount, parent->nranks);
  if (excludeCount > 0 && exclude == nullptr)
    return fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList is NULL but excludeRanksCount is %d",
                excludeCount);
  std::vector<bool> excluded(parent->nranks, false);
  for (int i = 0; i < excludeCount; ++i) {
    if (exclude[i] < 0 || exclude[i] >= parent->nranks)
      return fail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList[%d] = %d is not a rank of [0, %d)", i,
                  exclude[i], parent->nranks);
    excluded[exclude[i]] = true;
  }
  if (excluded[parent->rank])
    return fail(ncclInvalidArgument, "ncclCommShrink: rank %d is in excludeRanksList and must not call ncclCommShrink",
                parent->rank);
  CommConfig config;
  ACCL_CHECK(resolveConfig(call, userConfig, &parent->config, &config));

  // Survivors keep their relative order; no collective on the parent is needed, since every
  // survivor can compute the same membership from the exclude list.
  std::vector<int> members;
  for (int r = 0; r < parent->nranks; ++r)
    if (!excluded[r]) members.push_back(r);
  int childRank = (int)(std::find(members.begin(), members.end(), parent->rank) - members.begin());
  // The tag must agree among survivors only; excluded ranks never see it.
  int tag = kShrinkTagBase + parent->childCount++;
  if (flags == NCCL_SHRINK_ABORT) {
    // Stop whatever the parent still runs on other threads (a collective blocked on a dead peer,
    // a nonblocking job) before reusing its bootstrap; the parent takes no new work.
    if (parent->state.load() == CommState::Ready) parent->state = CommState::Revoked;
    ACCL_CHECK(quiesceComm(call, parent));
    joinCommJob(parent);
  }
  auto parentPin = std::make_shared<CommPin>(parent);
  ncclComm* child = newComm((int)members.size(), childRank, parent->cudaDev, parent->backend, config);
  *newcomm = child;
  return launchCommJob(child, [parent, parentPin, child, members, tag] {
    CommHold parentHold;
    ACCL_CHECK(holdParent("ncclCommShrink", parent, &parentHold));
    return childInit("ncclCommShrink", parent, child, members, tag, &parentHold);
  });
}

}  // namespace accl
