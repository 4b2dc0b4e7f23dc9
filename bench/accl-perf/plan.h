// The run plan every rank and the reporter walk in the same order: the tests (type x op x root, as
// nccl-tests nests them), the sizes of each sweep, and the numbered result steps (one per test, cycle,
// size and out-of-place/in-place half). Ranks and reporter never negotiate: they compute the same plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "catalog.h"
#include "options.h"

namespace accl::bench {

struct PlanTest {
  const TypeInfo* type;
  OpId op;         // meaningful when the collective reduces (or loops ops, sendrecv)
  int root;        // -1 for rootless collectives
};

struct PlanStep {
  int test;        // index into tests
  int cycle;
  size_t bytes;    // requested size (-b .. -e)
  bool inPlace;
};

struct Plan {
  CollId coll;
  int nranks;
  std::vector<PlanTest> tests;
  std::vector<size_t> sizes;
  std::vector<size_t> warmup;
  std::vector<PlanStep> steps;

  // Largest buffers any step needs on `rank`, in bytes, including the -u misalignment.
  size_t maxSendBytes(int unalign) const;
  size_t maxRecvBytes(int rank, int unalign) const;

  // Seed of the data of one checked call; identical on every rank.
  uint64_t dataSeed(int step, int checkIter) const;

  const char* opName(const PlanTest& t) const;  // "sum"... or "none"
};

Plan makePlan(const Options& opts, int nranks);

}  // namespace accl::bench
