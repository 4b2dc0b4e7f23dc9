// The data check: what every rank puts in its buffers before a checked call, and what each element of
// its output must be afterwards, in closed form (no reference run, no communication).
//
// Inputs are a deterministic function of (case seed, rank, element index). For collectives that only
// move data the inputs are arbitrary bit patterns, compared bit for bit. For reductions they are chosen
// so that the result does not depend on the order in which the library combines ranks:
//   * integer sum/prod/mulsum wrap modulo 2^bits, so any values work (prod uses odd values so the product
//     does not collapse to 0); min/max use arbitrary values; avg keeps the sum from overflowing and
//     truncates toward zero, as NCCL's integer average does;
//   * floating sum/mulsum use small integers whose partial sums all stay exactly representable (for the
//     narrow types only some ranks contribute at each element; the others contribute 0); prod uses
//     +-1/+-2 with a bounded number of 2s per element; min/max use exactly representable integers;
//   * floating avg is NCCL's pre-multiply by 1/nranks then sum; inputs are nranks*w with w integral when
//     nranks is exactly representable, so the result is w summed (otherwise a single rank contributes
//     per element); it is compared with a 2-ulp tolerance, as nccl-tests does.
// mulsum is ncclRedOpCreatePreMulSum with scalar 1 on even ranks and 2 on odd ranks (nccl-tests' choice).
#pragma once

#include <cstddef>
#include <cstdint>

#include "catalog.h"

namespace accl::bench {

// How a reduction input is drawn (see the file comment); exposed for the self-test.
struct ValueRule {
  enum class Mode { kRawBits, kRange, kPowerOfTwo } mode = Mode::kRawBits;
  int64_t lo = 0, hi = 0;  // kRange: integers in [lo, hi]
  int sparsity = 1;        // rank r contributes to element j only when (r + j) % sparsity == 0
  int64_t neutral = 0;     // what non-contributing ranks hold
  int64_t scale = 1;       // drawn value times this (avg on floating types: nranks)
  bool odd = false;        // kRawBits: force the lowest bit (prod on integers)
};

ValueRule chooseValueRule(const TypeInfo& type, OpId op, int nranks);

class Pattern {
 public:
  Pattern(CollId coll, const TypeInfo& type, OpId op, int root, int nranks, uint64_t seed);

  const TypeInfo& type() const { return *type_; }
  CollId coll() const { return coll_; }
  OpId op() const { return op_; }
  int root() const { return root_; }
  int nranks() const { return nranks_; }
  bool reduces() const { return reduces_; }

  // Bits of element j of `rank`'s input (its send buffer as the collective reads it).
  uint64_t input(int rank, size_t j) const;

  // Bits element idx of `rank`'s output region must hold after the call. `inPlace` matters for ranks
  // whose output is left untouched (reduce/gather non-roots): then the expectation is the buffer's
  // state before the call.
  uint64_t expected(int rank, bool inPlace, const CollShape& shape, size_t idx) const;

  // Whether an output element is acceptable: bit-exact for integers and moved data, equal value for
  // exact floating reductions, within 2 ulp for floating avg.
  bool matches(uint64_t got, uint64_t want) const;

  // The ncclRedOpCreatePreMulSum scalar of `rank` for mulsum, as element bits.
  static uint64_t preMulScalar(const TypeInfo& type, int rank);

 private:
  uint64_t reductionInput(int rank, size_t j) const;
  uint64_t reduced(size_t j) const;  // the reduction over all ranks of input element j
  uint64_t initialRecv(int rank, bool inPlace, const CollShape& shape, size_t recvIndex) const;

  CollId coll_;
  const TypeInfo* type_;
  OpId op_;
  int root_;
  int nranks_;
  uint64_t seed_;
  bool reduces_;
  ValueRule rule_;
  double avgScalar_ = 0;  // floating avg: the 1/nranks factor as the library rounds it
};

// Elements of recvbuff an in-place call uses on `rank` (input and output live there).
size_t inPlaceExtent(const CollShape& shape, int rank);

// Fills one rank's host staging buffers for a checked call.
//  out of place: send gets shape.send input elements; recv (shape.recv elements) is zeroed.
//  in place: recv (inPlaceExtent elements) is zeroed, then the input is written at the rank's in-place
//            send offset; send is not used.
void fillRank(const Pattern& p, int rank, bool inPlace, const CollShape& shape, void* send, void* recv);

struct WrongSample {
  size_t index = 0;
  uint64_t got = 0, want = 0;
};

// Counts the wrong elements of `output` (the rank's shape.recv output elements, i.e. recvbuff plus the
// in-place receive offset). The first mismatch is stored in *first when given.
int64_t countWrong(const Pattern& p, int rank, bool inPlace, const CollShape& shape, const void* output,
                   WrongSample* first = nullptr);

}  // namespace accl::bench
