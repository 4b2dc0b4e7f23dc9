// Closed-form inputs and expected results of the collective correctness matrix.
//
// A CaseSpec names one collective call (collective, type, op, count, in-place or not, root,
// misalignment). CaseModel turns it into numbers: the input element j of rank r, and the
// expected result, computed directly from (rank, index, nranks) -- never by running a reference
// collective. RankLayout says, for one rank, which buffers the call gets, where its pointers
// point (NCCL's in-place conventions), what every element holds before the call and what it
// must hold after it, guard elements around each buffer included.
//
// Inputs are chosen so that every expected value is exact in every element type whatever order
// the library reduces in:
//   * integers: sum/prod/max/min/premulsum use raw random bits (wrap-around arithmetic is exact
//     and order-free; prod uses odd values so products do not collapse to 0); avg uses small
//     values with negative sums that are not multiples of nranks, so truncation toward zero shows.
//   * floats: sum and premulsum use small integers whose running sums stay within the type's
//     exact-integer budget (fp8 e5m2: 8); prod uses factors +-1, +-2 (and 0.5 except fp8), i.e.
//     powers of two; max/min use random finite bit patterns (no NaN, no -0); avg feeds
//     nranks * a with a in {0, +-1, +-2}, so each contribution times round(1/nranks) rounds back
//     to a and the mean is the exact integer sum of the a's.
//   * avg and premulsum on floating types are compared within kFloatAvgUlpTolerance units in the
//     last place (NCCL multiplies each contribution by the scalar in the element type); every
//     other element must match bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mp/collective_types.h"
#include "nccl.h"

namespace accl::test {

enum class Coll {
  kAllReduce,
  kReduce,
  kBroadcast,
  kBcast,
  kReduceScatter,
  kAllGather,
  kAlltoAll,
  kGather,
  kScatter
};
inline constexpr int kNumColls = 9;
inline constexpr Coll kAllColls[kNumColls] = {Coll::kAllReduce, Coll::kReduce,        Coll::kBroadcast,
                                              Coll::kBcast,     Coll::kReduceScatter, Coll::kAllGather,
                                              Coll::kAlltoAll,  Coll::kGather,        Coll::kScatter};

// Reduction operators of the matrix. kPreMulSumImm / kPreMulSumDev: ncclRedOpCreatePreMulSum
// with ncclScalarHostImmediate / ncclScalarDevice. kNone: a collective without reduction.
enum class Op { kSum, kProd, kMax, kMin, kAvg, kPreMulSumImm, kPreMulSumDev, kNone };
inline constexpr int kNumReduceOps = 7;
inline constexpr Op kAllReduceOps[kNumReduceOps] = {Op::kSum, Op::kProd,         Op::kMax,         Op::kMin,
                                                    Op::kAvg, Op::kPreMulSumImm, Op::kPreMulSumDev};

// Units in the last place allowed for avg and premulsum on floating types (nccl-tests allows 2).
inline constexpr uint64_t kFloatAvgUlpTolerance = 2;
// Guard elements before and after every buffer; they must never change.
inline constexpr size_t kGuardElems = 8;

const char* collName(Coll coll);       // "AllReduce", "Bcast", ...
const char* opName(Op op);             // "sum", ..., "premulsum", "premulsum-dev", "none"
bool collReduces(Coll coll);           // AllReduce, Reduce, ReduceScatter
bool collHasRoot(Coll coll);           // Reduce, Broadcast, Bcast, Gather, Scatter
bool collAllowsOutOfPlace(Coll coll);  // all but Bcast
bool collAllowsInPlace(Coll coll);     // all but AlltoAll
// The built-in ncclRedOp_t for op (kPreMulSum* and kNone have none: returns ncclNumOps).
ncclRedOp_t builtinRedOp(Op op);

struct CaseSpec {
  Coll coll = Coll::kAllReduce;
  ncclDataType_t type = ncclFloat32;
  Op op = Op::kNone;
  size_t count = 0;  // the count argument of the call (per-rank count; recvcount for ReduceScatter)
  bool inPlace = false;
  int root = 0;      // ignored unless collHasRoot
  int misalign = 0;  // every buffer pointer is shifted by this many elements from its aligned start

  bool operator==(const CaseSpec&) const = default;
};

// "AllReduce float premulsum count=7 in-place root=- misalign=1"
std::string describeCase(const CaseSpec& cs);

// How the inputs of one case are drawn (see the file comment).
enum class ValueKind { kRawBits, kRawOddBits, kFiniteBits, kSmallInt, kPowerOfTwoFactor, kAvgScaled };
struct ValuePlan {
  ValueKind kind = ValueKind::kFiniteBits;
  int64_t magnitude = 0;   // kSmallInt: |value| <= magnitude; kAvgScaled: |a| <= magnitude
  int stride = 1;          // only ranks with (rank + j) % stride == 0 contribute a non-neutral value
  bool allowHalf = false;  // kPowerOfTwoFactor: 0.5 may appear
  bool tolerant = false;   // compare within kFloatAvgUlpTolerance
};
ValuePlan planValues(ncclDataType_t type, Op op, int nranks);

// The PreMulSum scalar of rank r as an integer: the value the reduction must use.
int64_t premulScalar(ncclDataType_t type, Op op, int rank);
// kPreMulSumDev: the value the scalar holds when the op is created; the test replaces it with
// premulScalar before the call (the library must read it when the reduction runs).
// kPreMulSumImm: the value the test writes after creation (the library must have copied it).
int64_t premulDecoyScalar(ncclDataType_t type);

struct ExpectedElem {
  uint64_t bits = 0;
  bool tolerant = false;
};

// The expected reduction of one element: inputs[q] is rank q's element (bits), op's PreMulSum
// scalars are premulScalar(type, op, q). Integers wrap; floats are computed exactly (the
// generated inputs keep them exact) and rounded once.
ExpectedElem reduceElements(ncclDataType_t type, Op op, const std::vector<uint64_t>& inputs);

// Values of one case on a communicator of nranks ranks.
class CaseModel {
 public:
  CaseModel(const CaseSpec& cs, int nranks);

  const CaseSpec& spec() const { return cs_; }
  int nranks() const { return nranks_; }
  ncclDataType_t type() const { return cs_.type; }
  const ValuePlan& plan() const { return plan_; }

  // Element j of rank r's send data (j < count, or < nranks*count for ReduceScatter, AlltoAll
  // and the root of Scatter).
  uint64_t input(int rank, size_t j) const;
  // The reduction over all ranks of input(q, j).
  ExpectedElem reduced(size_t j) const;
  // Junk that fills buffers (or parts) the call must not touch.
  uint64_t pattern(size_t e) const;
  uint64_t guard() const;

 private:
  double floatInput(int rank, size_t j) const;  // the logical value of a floating reduction input
  CaseSpec cs_;
  int nranks_;
  ValuePlan plan_;
  uint64_t salt_;
};

// What one range of a buffer holds.
enum class Fill : uint8_t {
  kPattern,  // CaseModel::pattern
  kInput,    // input(rank, j0 + k)
  kReduced,  // reduced(j0 + k)
  kMoved,    // input(rank, j0 + k), delivered by the collective
  kPoison,   // initial only: the bitwise complement of the expected final value
  kKeep,     // final only: unchanged from the initial content
};
struct Segment {
  size_t begin = 0, end = 0;  // element range in the buffer's usable part
  Fill fill = Fill::kPattern;
  int rank = -1;
  size_t j0 = 0;
};
struct BufferLayout {
  std::string name;              // "sendbuff", "recvbuff" or "buff" (in place)
  size_t elems = 0;              // usable elements; kGuardElems (+ misalign) before, kGuardElems after
  std::vector<Segment> initial;  // cover [0, elems) in order
  std::vector<Segment> final;
};
struct RankLayout {
  std::vector<BufferLayout> buffers;
  int sendBuffer = 0;     // index into buffers
  size_t sendOffset = 0;  // element offset from the buffer's usable start
  int recvBuffer = 0;
  size_t recvOffset = 0;
};

// The buffers, pointers, and before/after contents of rank `rank` for the case.
RankLayout layoutFor(const CaseSpec& cs, int nranks, int rank);

// Element e of a buffer's usable part (e may be negative or >= elems: guards).
uint64_t initialElem(const CaseModel& model, const BufferLayout& buffer, int64_t e);
ExpectedElem finalElem(const CaseModel& model, const BufferLayout& buffer, int64_t e);

// Whether got matches the expectation.
bool elemMatches(ncclDataType_t type, const ExpectedElem& want, uint64_t got);

// A host allocation holding one BufferLayout with its guards.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();
  // Makes room for the layout (reusing the allocation when big enough) and writes the initial
  // content, guards included.
  void prepare(const CaseModel& model, const BufferLayout& layout);
  // Address of usable element `offset`.
  void* at(size_t offset);

  // Compares with the expected final content; returns the number of wrong elements and appends
  // up to maxReport descriptions "recvbuff[5]: expected ... got ...".
  size_t check(const CaseModel& model, const BufferLayout& layout, size_t maxReport,
               std::vector<std::string>* reports) const;

 private:
  char* base_ = nullptr;
  size_t capacityBytes_ = 0;
  size_t front_ = 0;  // elements before usable element 0
  size_t elems_ = 0;
  ncclDataType_t type_ = ncclInt8;
};

}  // namespace accl::test
