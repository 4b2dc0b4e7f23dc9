// Builds the run plan from the options (see plan.h).
#include "plan.h"

#include <algorithm>

#include "pattern.h"

namespace accl::bench {

Plan makePlan(const Options& o, int nranks) {
  Plan p;
  p.coll = o.coll;
  p.nranks = nranks;
  const CollInfo& ci = collInfo(o.coll);
  std::vector<OpId> ops = (ci.reduces || ci.loopsOps) ? o.ops : std::vector<OpId>{OpId::kSum};
  std::vector<int> roots;
  if (!ci.rooted) {
    roots = {-1};
  } else if (o.allRoots) {
    for (int r = 0; r < nranks; ++r) roots.push_back(r);
  } else {
    roots = {o.root};
  }
  for (const TypeInfo* t : o.types)
    for (OpId op : ops)
      for (int root : roots) p.tests.push_back({t, op, root});
  p.sizes = sweepSizes(o);
  p.warmup = warmupSizes(o);
  for (int t = 0; t < (int)p.tests.size(); ++t)
    for (int c = 0; c < o.runCycles; ++c)
      for (size_t bytes : p.sizes)
        for (int ip = 0; ip < 2; ++ip) p.steps.push_back({t, c, bytes, ip == 1});
  return p;
}

size_t Plan::maxSendBytes(int unalign) const {
  size_t best = 0;
  size_t pad = 0;
  for (const PlanTest& t : tests) {
    auto consider = [&](size_t bytes) {
      best = std::max(best, collShape(coll, bytes, t.type->size, nranks).send * (size_t)t.type->size);
    };
    for (size_t bytes : sizes) consider(bytes);
    for (size_t bytes : warmup) consider(bytes);
    pad = std::max(pad, (size_t)unalign * (size_t)t.type->size);
  }
  return best + pad;
}

size_t Plan::maxRecvBytes(int rank, int unalign) const {
  size_t best = 0;
  size_t pad = 0;
  for (const PlanTest& t : tests) {
    auto consider = [&](size_t bytes) {
      CollShape s = collShape(coll, bytes, t.type->size, nranks);
      size_t elems = std::max(s.recv, inPlaceExtent(s, rank));
      best = std::max(best, elems * (size_t)t.type->size);
    };
    for (size_t bytes : sizes) consider(bytes);
    for (size_t bytes : warmup) consider(bytes);
    pad = std::max(pad, (size_t)unalign * (size_t)t.type->size);
  }
  return best + pad;
}

uint64_t Plan::dataSeed(int step, int checkIter) const {
  return 0x6163636c70657266ull ^ ((uint64_t)step << 20) ^ (uint64_t)checkIter;
}

const char* Plan::opName(const PlanTest& t) const {
  const CollInfo& ci = collInfo(coll);
  return (ci.reduces || ci.loopsOps) ? opInfo(t.op).name : "none";
}

}  // namespace accl::bench
