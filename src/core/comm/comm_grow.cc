// Grow ids and the grow of a communicator (see comm_grow.h): argument checks on existing and
// joining ranks, the rendezvous of the existing ranks over the old bootstrap, and the bookkeeping
// that makes every id work once.
#include "core/comm/comm_grow.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/comm/comm_init.h"
#include "core/comm/comm_lifetime.h"
#include "core/engine/group.h"
#include "core/bootstrap/unique_id.h"
#include "device/device_probe.h"
#include "util/check.h"
#include "util/host_identity.h"
#include "util/log.h"

namespace accl {
namespace {

constexpr const char* kGrow = "ncclCommGrow";

// Guards every communicator's growTicket and the spent-id set. Never destroyed: a background
// grow may still retire its ticket while the process exits.
std::mutex& growMutex() {
  static auto* m = new std::mutex;
  return *m;
}

// Ids a grow has run with in this process.
std::set<std::string>& spentIds() {
  static auto* s = new std::set<std::string>;
  return *s;
}

std::string idKey(const ncclUniqueId& id) { return std::string(id.internal, sizeof(id.internal)); }

bool sameId(const ncclUniqueId& a, const ncclUniqueId& b) {
  return std::memcmp(a.internal, b.internal, sizeof(a.internal)) == 0;
}

bool isSpent(const ncclUniqueId& id) {
  std::lock_guard<std::mutex> lock(growMutex());
  return spentIds().count(idKey(id)) != 0;
}

// What each existing rank brings to the rendezvous (one all-gather over the old bootstrap).
struct GrowOffer {
  int32_t nRanks = 0;
  int32_t passedId = 0;  // this rank passed an id: it is the root
  int32_t holdsId = 0;   // this rank holds an id from ncclCommGetUniqueId (passed or not)
  int32_t pad = 0;
  ncclUniqueId id{};
};

// The existing ranks agree on nRanks and on exactly one root; every rank reaches the same
// verdict from the same table, so they fail together. Returns the root's id.
ncclResult_t agreeOnGrow(ncclComm* parent, const GrowOffer& mine, ncclUniqueId* id) {
  std::vector<GrowOffer> offers(parent->nranks);
  offers[parent->rank] = mine;
  ACCL_CHECK(parent->bootstrap->allGather(offers.data(), sizeof(GrowOffer)));
  std::vector<int> roots, holders;
  for (int r = 0; r < parent->nranks; ++r) {
    if (offers[r].nRanks != mine.nRanks)
      return fail(ncclInvalidArgument, "existing ranks disagree on nRanks: rank %d passed %d, rank %d passed %d", r,
                  offers[r].nRanks, parent->rank, mine.nRanks);
    if (offers[r].passedId) roots.push_back(r);
    if (offers[r].holdsId) holders.push_back(r);
  }
  if (roots.empty() && !holders.empty())
    return fail(ncclInvalidArgument,
                "no existing rank passed the grow id: rank %d made one with ncclCommGetUniqueId and must pass it "
                "(uniqueId is NULL there)",
                holders.front());
  if (roots.empty())
    return fail(ncclInvalidArgument,
                "no existing rank passed a grow id: one rank must make it with ncclCommGetUniqueId and pass it");
  if (roots.size() > 1)
    return fail(ncclInvalidArgument,
                "ranks %d and %d both passed a grow id: only one existing rank (the root) passes its id, the others "
                "pass NULL",
                roots[0], roots[1]);
  *id = offers[roots.front()].id;
  return ncclSuccess;
}

// After the root's grow ended (either way): its id is spent and the rank may make a new one.
void retireTicket(ncclComm* parent, const std::shared_ptr<GrowTicket>& ticket) {
  std::lock_guard<std::mutex> lock(growMutex());
  spentIds().insert(idKey(ticket->id));
  if (parent->growTicket == ticket) parent->growTicket.reset();
}

// The root passes the id its comm holds; everybody else passes NULL. Decides which this rank is.
ncclResult_t checkExistingId(ncclComm* comm, const ncclUniqueId* id, std::shared_ptr<GrowTicket>* root,
                             bool* holdsId) {
  std::lock_guard<std::mutex> lock(growMutex());
  const std::shared_ptr<GrowTicket>& ticket = comm->growTicket;
  *holdsId = ticket && !ticket->launched;
  if (id == nullptr) return ncclSuccess;
  if (spentIds().count(idKey(*id)))
    return fail(ncclInvalidUsage,
                "ncclCommGrow: rank %d: uniqueId was already used by an earlier ncclCommGrow; each id works once "
                "(make a new one with ncclCommGetUniqueId)",
                comm->rank);
  if (!ticket)
    return fail(ncclInvalidArgument,
                "ncclCommGrow: rank %d passed a uniqueId but made none with ncclCommGetUniqueId on this comm: "
                "existing ranks other than the root pass NULL",
                comm->rank);
  if (!sameId(ticket->id, *id))
    return fail(ncclInvalidArgument,
                "ncclCommGrow: rank %d: uniqueId is not the id ncclCommGetUniqueId returned for this comm",
                comm->rank);
  if (ticket->launched)
    return fail(ncclInvalidUsage, "ncclCommGrow: rank %d: a grow with this uniqueId is already running",
                comm->rank);
  ticket->launched = true;
  *root = ticket;
  return ncclSuccess;
}

ncclResult_t growExisting(ncclComm* parent, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                          const ncclConfig_t* userConfig) {
  if (nRanks <= parent->nranks)
    return fail(ncclInvalidArgument, "ncclCommGrow: nRanks %d must be larger than the communicator's size %d",
                nRanks, parent->nranks);
  if (rank != -1)
    return fail(ncclInvalidArgument,
                "ncclCommGrow: rank %d is invalid for an existing rank (comm is not NULL): pass -1, it keeps rank %d",
                rank, parent->rank);
  CommConfig config;
  ACCL_CHECK(resolveConfig(kGrow, userConfig, &parent->config, &config));
  std::shared_ptr<GrowTicket> root;
  GrowOffer offer;
  bool holdsId = false;
  ACCL_CHECK(checkExistingId(parent, id, &root, &holdsId));
  offer.nRanks = nRanks;
  offer.passedId = root != nullptr;
  offer.holdsId = holdsId;
  if (root) offer.id = root->id;

  ncclComm* child = newComm(nRanks, parent->rank, parent->cudaDev, parent->backend, config);
  *newcomm = child;
  ACCL_INFO(ACCL_LOG_INIT, "ncclCommGrow: comm %p rank %d grows from %d to %d ranks into comm %p%s", (void*)parent,
            parent->rank, parent->nranks, nRanks, (void*)child, root ? " (root)" : "");
  // The job uses the parent's bootstrap and grow ticket: pin its memory and hold it while the job
  // runs, so an abort of the parent on another thread interrupts the job and waits for it instead
  // of freeing them under it (as split and shrink do).
  auto parentPin = std::make_shared<CommPin>(parent);
  return launchCommJob(child, [parent, parentPin, child, offer, root] {
    CommHold parentHold;
    if (!threadHolds(parent)) ACCL_CHECK(parentHold.acquire(kGrow, parent));
    ncclUniqueId growId;
    ncclResult_t res = blame(kGrow, parent->rank, agreeOnGrow(parent, offer, &growId));
    if (res == ncclSuccess) {
      child->commHash = fnv1a64(&growId, sizeof(growId));
      res = initJob(kGrow, child, {growId});
    }
    if (root) retireTicket(parent, root);
    return res;
  });
}

ncclResult_t growJoiner(int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                        const ncclConfig_t* userConfig) {
  if (id == nullptr)
    return fail(ncclInvalidArgument,
                "ncclCommGrow: uniqueId is NULL on a joining rank (comm is NULL): pass the id the root made with "
                "ncclCommGetUniqueId");
  UniqueIdInfo info;
  ACCL_CHECK(parseUniqueId(*id, &info, kGrow));
  if (info.growFromRanks == 0)
    return fail(ncclInvalidArgument,
                "ncclCommGrow: uniqueId was made by ncclGetUniqueId, not by ncclCommGetUniqueId on the communicator "
                "being grown");
  const int oldRanks = (int)info.growFromRanks;
  if (isSpent(*id))
    return fail(ncclInvalidUsage,
                "ncclCommGrow: uniqueId was already used by an earlier ncclCommGrow; each id works once");
  if (nRanks <= oldRanks)
    return fail(ncclInvalidArgument, "ncclCommGrow: nRanks %d must be larger than the size %d of the communicator being grown",
                nRanks, oldRanks);
  if (rank < oldRanks || rank >= nRanks)
    return fail(ncclInvalidArgument,
                "ncclCommGrow: rank %d is out of range for a joining rank (comm is NULL): new ranks are [%d, %d)",
                rank, oldRanks, nRanks);
  CommConfig config;
  ACCL_CHECK(resolveConfig(kGrow, userConfig, nullptr, &config));
  Backend backend;
  ACCL_CHECK(selectBackend(kGrow, &backend));
  logVersionBannerOnce();
  ncclComm* comm = newComm(nRanks, rank, cudaCurrentDevice(), backend, config);
  comm->commHash = fnv1a64(id, sizeof(*id));
  *newcomm = comm;
  ACCL_INFO(ACCL_LOG_INIT, "ncclCommGrow: comm %p joins as rank %d of %d (grown from %d)", (void*)comm, rank, nRanks,
            oldRanks);
  const ncclUniqueId growId = *id;
  return launchCommJob(comm, [comm, growId] { return initJob(kGrow, comm, {growId}); });
}

}  // namespace

ncclResult_t makeGrowId(ncclComm* comm, ncclUniqueId* out) {
  std::lock_guard<std::mutex> lock(growMutex());
  if (comm->growTicket)
    return fail(ncclInvalidUsage,
                comm->growTicket->launched
                    ? "ncclCommGetUniqueId: rank %d: the grow that uses this comm's previous id is still running; "
                      "wait for it to complete"
                    : "ncclCommGetUniqueId: rank %d: this comm's previous id has not been used by ncclCommGrow yet; "
                      "one id at a time",
                comm->rank);
  ncclUniqueId id;
  // A root of our own, never NCCL_COMM_ID's: the old communicator may be using that address.
  ACCL_CHECK(createLocalUniqueId(&id));
  UniqueIdInfo info;
  ACCL_CHECK(parseUniqueId(id, &info, "ncclCommGetUniqueId"));
  info.growFromRanks = (uint32_t)comm->nranks;
  encodeUniqueId(info, &id);
  comm->growTicket = std::make_shared<GrowTicket>();
  comm->growTicket->id = id;
  *out = id;
  ACCL_INFO(ACCL_LOG_INIT, "ncclCommGetUniqueId: comm %p rank %d made a grow id (root %s)", (void*)comm, comm->rank,
            info.root.toString().c_str());
  return ncclSuccess;
}

ncclResult_t growComm(ncclComm* comm, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                      const ncclConfig_t* config) {
  *newcomm = nullptr;
  if (comm == nullptr) return growJoiner(nRanks, id, rank, newcomm, config);
  return growExisting(comm, nRanks, id, rank, newcomm, config);
}

}  // namespace accl
