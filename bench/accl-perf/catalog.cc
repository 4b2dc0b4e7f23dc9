// Tables of types, operators and collectives, and the per-collective buffer shapes and bandwidth formulas.
#include "catalog.h"

#include <array>

namespace accl::bench {
namespace {

constexpr std::array<TypeInfo, 12> kTypes = {{
    {"int8", ncclInt8, 1, TypeKind::kSigned, 0, 0, false},
    {"uint8", ncclUint8, 1, TypeKind::kUnsigned, 0, 0, false},
    {"int32", ncclInt32, 4, TypeKind::kSigned, 0, 0, false},
    {"uint32", ncclUint32, 4, TypeKind::kUnsigned, 0, 0, false},
    {"int64", ncclInt64, 8, TypeKind::kSigned, 0, 0, false},
    {"uint64", ncclUint64, 8, TypeKind::kUnsigned, 0, 0, false},
    {"half", ncclFloat16, 2, TypeKind::kFloat, 5, 10, false},
    {"float", ncclFloat32, 4, TypeKind::kFloat, 8, 23, false},
    {"double", ncclFloat64, 8, TypeKind::kFloat, 11, 52, false},
    {"bfloat16", ncclBfloat16, 2, TypeKind::kFloat, 8, 7, false},
    {"f8e4m3", ncclFloat8e4m3, 1, TypeKind::kFloat, 4, 3, true},
    {"f8e5m2", ncclFloat8e5m2, 1, TypeKind::kFloat, 5, 2, false},
}};

constexpr std::array<OpInfo, 6> kOps = {{
    {"sum", OpId::kSum},
    {"prod", OpId::kProd},
    {"max", OpId::kMax},
    {"min", OpId::kMin},
    {"avg", OpId::kAvg},
    {"mulsum", OpId::kMulSum},
}};

constexpr std::array<CollInfo, 9> kColls = {{
    {"all_reduce", CollId::kAllReduce, true, false, false, true},
    {"all_gather", CollId::kAllGather, false, false, false, true},
    {"reduce_scatter", CollId::kReduceScatter, true, false, false, true},
    {"broadcast", CollId::kBroadcast, false, false, true, true},
    {"reduce", CollId::kReduce, true, false, true, true},
    {"alltoall", CollId::kAllToAll, false, false, false, false},
    {"sendrecv", CollId::kSendRecv, false, true, false, false},
    {"gather", CollId::kGather, false, false, true, true},
    {"scatter", CollId::kScatter, false, false, true, true},
}};

// Per-rank block of the gather/scatter-shaped collectives: count/nranks rounded down to whole
// 16-byte units (nccl-tests does the same so that every rank's block starts 16-byte aligned).
size_t alignedBlock(size_t count, int eltSize, int nranks) {
  size_t unit = eltSize >= 16 ? 1 : 16 / (size_t)eltSize;
  return (count / (size_t)nranks) & ~(unit - 1);
}

}  // namespace

std::span<const TypeInfo> allTypes() { return kTypes; }

const TypeInfo* findType(std::string_view name) {
  for (const TypeInfo& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

const TypeInfo& typeInfo(ncclDataType_t type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t;
  return kTypes[7];  // unreachable for valid types
}

std::span<const OpInfo> allOps() { return kOps; }

const OpInfo* findOp(std::string_view name) {
  for (const OpInfo& o : kOps)
    if (name == o.name) return &o;
  return nullptr;
}

const OpInfo& opInfo(OpId id) { return kOps[(int)id]; }

std::span<const CollInfo> allColls() { return kColls; }

const CollInfo* findColl(std::string_view name) {
  for (const CollInfo& c : kColls)
    if (name == c.name) return &c;
  return nullptr;
}

const CollInfo& collInfo(CollId id) { return kColls[(int)id]; }

CollShape collShape(CollId coll, size_t bytes, int eltSize, int nranks) {
  size_t count = bytes / (size_t)eltSize;
  size_t n = (size_t)nranks;
  CollShape s;
  switch (coll) {
    case CollId::kAllReduce:
    case CollId::kBroadcast:
    case CollId::kReduce:
    case CollId::kSendRecv:
      s.param = s.send = s.recv = count;
      break;
    case CollId::kAllGather:
    case CollId::kGather: {
      size_t base = alignedBlock(count, eltSize, nranks);
      s.param = s.send = base;
      s.recv = base * n;
      s.sendInPlaceOffset = base;
      break;
    }
    case CollId::kReduceScatter:
    case CollId::kScatter: {
      size_t base = alignedBlock(count, eltSize, nranks);
      s.param = s.recv = base;
      s.send = base * n;
      s.recvInPlaceOffset = base;
      break;
    }
    case CollId::kAllToAll: {
      size_t base = alignedBlock(count, eltSize, nranks);
      s.param = base;
      s.send = s.recv = base * n;
      break;
    }
  }
  return s;
}

size_t reportedBytes(const CollShape& shape, int eltSize) {
  return (shape.send > shape.recv ? shape.send : shape.recv) * (size_t)eltSize;
}

double algBandwidth(CollId coll, size_t paramCount, int eltSize, int nranks, double sec) {
  double bytes = (double)paramCount * (double)eltSize;
  switch (coll) {
    case CollId::kAllGather:
    case CollId::kReduceScatter:
    case CollId::kAllToAll:
    case CollId::kGather:
    case CollId::kScatter:
      bytes *= (double)nranks;
      break;
    default:
      break;
  }
  return bytes / 1.0e9 / sec;
}

double busFactor(CollId coll, int nranks) {
  double n = (double)nranks;
  switch (coll) {
    case CollId::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollId::kAllGather:
    case CollId::kReduceScatter:
    case CollId::kAllToAll:
    case CollId::kGather:
    case CollId::kScatter:
      return (n - 1.0) / n;
    case CollId::kBroadcast:
    case CollId::kReduce:
    case CollId::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace accl::bench
