// The things accl-perf can run, by name: element types, reduction operators and collectives, with each
// collective's buffer shape (how a byte size becomes send/recv counts and in-place offsets) and its
// algorithm/bus bandwidth formula. Counts, offsets and bandwidth factors follow nccl-tests so that
// accl-perf's numbers can be compared with nccl-tests' line by line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "nccl.h"

namespace accl::bench {

enum class TypeKind { kSigned, kUnsigned, kFloat };

struct TypeInfo {
  const char* name;       // nccl-tests spelling: int8 ... f8e5m2
  ncclDataType_t type;
  int size;               // bytes per element
  TypeKind kind;
  int expBits;            // floating types only
  int manBits;            // stored mantissa bits (floating types only)
  bool finiteOnly;        // fp8 e4m3: no infinities, a single NaN pattern per sign
};

// All twelve types in nccl-tests' order (the order of `-d all`).
std::span<const TypeInfo> allTypes();
const TypeInfo* findType(std::string_view name);
const TypeInfo& typeInfo(ncclDataType_t type);

enum class OpId { kSum, kProd, kMax, kMin, kAvg, kMulSum };

struct OpInfo {
  const char* name;  // sum prod max min avg mulsum
  OpId id;
};

// The six operators in nccl-tests' order (the order of `-o all`).
std::span<const OpInfo> allOps();
const OpInfo* findOp(std::string_view name);
const OpInfo& opInfo(OpId id);

enum class CollId {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
  kGather,
  kScatter,
};

struct CollInfo {
  const char* name;      // all_reduce ... scatter (the binary is <name>_perf)
  CollId id;
  bool reduces;          // takes a reduction operator (and is checked against a reduction)
  bool loopsOps;         // prints/iterates the operator column even without reducing (sendrecv, as nccl-tests)
  bool rooted;           // takes a root
  bool checksInPlace;    // in-place results are verified (alltoall/sendrecv in place: "N/A", as nccl-tests)
};

std::span<const CollInfo> allColls();
const CollInfo* findColl(std::string_view name);
const CollInfo& collInfo(CollId id);

// Element counts of one call. `param` is the count passed to the library; send/recv are the elements
// each rank's buffers must hold; the in-place offsets are per rank (multiply by the rank).
struct CollShape {
  size_t param = 0;
  size_t send = 0;
  size_t recv = 0;
  size_t sendInPlaceOffset = 0;
  size_t recvInPlaceOffset = 0;
};

// bytes is the requested message size (-b/-e); counts are derived exactly as nccl-tests does, including
// the 16-byte alignment of per-rank blocks for the gather/scatter-shaped collectives.
CollShape collShape(CollId coll, size_t bytes, int eltSize, int nranks);

// The "size" column: the larger of the send and receive byte counts.
size_t reportedBytes(const CollShape& shape, int eltSize);

// algbw in GB/s (1e9 bytes) for one call of `sec` seconds; busbw = algbw * busFactor.
double algBandwidth(CollId coll, size_t paramCount, int eltSize, int nranks, double sec);
double busFactor(CollId coll, int nranks);

}  // namespace accl::bench
