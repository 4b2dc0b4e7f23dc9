// The measurement harness behind `accl-tune calibrate` and `accl-tune regret`: forks one process
// per rank, creates one communicator per candidate (each initialised under its own NCCL_ALGO /
// NCCL_PROTO, so the tuner is forced to that algorithm x protocol; an empty candidate leaves the
// tuner free) and, for every size, times all candidates in interleaved rounds (the order rotates
// each round), so drift on a busy machine hits every candidate alike. A result is the median over
// rounds of the per-operation time, each round's time being the slowest rank's. Ranks are pinned
// round-robin to the allowed CPUs (as `mpirun --bind-to core` does) and settle for 0.3 s before
// the first measurement, so every launch starts from the same placement.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "device/common/ids.h"

namespace accl::tune {

struct Candidate {
  std::string algo;   // NCCL_ALGO for this communicator ("" = unset)
  std::string proto;  // NCCL_PROTO ("" = unset)
  std::string label() const { return algo.empty() && proto.empty() ? "auto" : algo + "/" + proto; }
};

struct MeasureSpec {
  FuncId func = kFuncAllReduce;
  int nRanks = 2;
  std::vector<size_t> sizes;          // bytes of the whole operation
  std::vector<Candidate> candidates;
  int rounds = 5;                     // per size
  double targetUs = 20000;            // aim for this much time per candidate per round
  int timeoutSec = 1800;              // the whole run; ranks are killed after it
  bool reportPicks = false;           // also return the tuner's pick of an "auto" candidate
  bool pin = true;                    // pin rank r to the (r mod #CPUs)-th allowed CPU
};

struct MeasureResult {
  // us[s][c]: median per-operation time of candidate c at sizes[s]; negative when the candidate
  // failed (e.g. not available at that size) or was dropped after being 3x slower than the best
  // at two sizes in a row (it cannot win at larger sizes).
  std::vector<std::vector<double>> us;
  // picks[s]: what the auto communicator's tuner chose at sizes[s] ("Ring/Simple"), if asked.
  std::vector<std::string> picks;
};

// Runs the measurement; false with a message in *error on failure (a rank died or timed out).
bool measure(const MeasureSpec& spec, MeasureResult* out, std::string* error);

// "8", "64K", "256M", "1G" -> bytes; false when malformed.
bool parseSize(const std::string& text, size_t* out);
// The sizes min, min*factor, ... up to max.
std::vector<size_t> sizeRange(size_t minBytes, size_t maxBytes, double factor);
// The median of a non-empty list (the mean of the middle two for an even count).
double median(std::vector<double> v);
// "all_reduce" / "allreduce" / "AllReduce" -> FuncId; false when unknown.
bool parseFunc(const std::string& text, FuncId* out);
// The host backend's candidates for `func`: Ring x {LL, Simple}, plus Tree x {LL, Simple} and
// OneShot for AllReduce.
std::vector<Candidate> hostCandidates(FuncId func);

}  // namespace accl::tune
