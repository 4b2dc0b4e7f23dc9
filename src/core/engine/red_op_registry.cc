// RedOpRegistry: user-created PreMulSum ops of one communicator, and op resolution for collectives.
#include "core/engine/red_op_registry.h"

#include <cstring>

#include "device/common/dtypes.h"
#include "util/check.h"

namespace accl {

RedOpRegistry::RedOpRegistry(const void* commKey) : commKey_(commKey) {}

ncclRedOp_t RedOpRegistry::mangle(const void* commKey, ncclRedOp_t op) {
  if (int(op) < int(ncclNumOps)) return op;
  uint64_t h = uint64_t(reinterpret_cast<uintptr_t>(commKey));
  h ^= h >> 32;
  h *= 0x9e3779b97f4a7c13ull;  // 2^64 / golden ratio: spreads the address bits
  h >>= 32;
  h &= uint64_t(ncclMaxRedOp);
  int flipped = int(h) ^ int(op);
  return flipped < int(ncclNumOps) ? op : ncclRedOp_t(flipped);
}

int RedOpRegistry::liveIndex(ncclRedOp_t op) const {
  if (int(op) < int(ncclNumOps)) return -1;
  int ix = int(mangle(commKey_, op)) - int(ncclNumOps);
  if (ix < 0 || ix >= int(entries_.size())) return -1;
  return entries_[ix].freeNext == kAllocated ? ix : -1;
}

ncclResult_t RedOpRegistry::createPreMulSum(ncclRedOp_t* op, const void* scalar, ncclDataType_t type,
                                            ncclScalarResidence_t residence) {
  constexpr const char* kCall = "ncclRedOpCreatePreMulSum";
  if (op == nullptr) return fail(ncclInvalidArgument, "%s: op (output pointer) is NULL", kCall);
  if (scalar == nullptr) return fail(ncclInvalidArgument, "%s: scalar pointer is NULL", kCall);
  if (!dtypeValid(type)) return fail(ncclInvalidArgument, "%s: invalid datatype %d", kCall, int(type));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return fail(ncclInvalidArgument, "%s: invalid scalar residence %d (expected %d or %d)", kCall, int(residence),
                int(ncclScalarDevice), int(ncclScalarHostImmediate));
  }
  DevRedOp dev;
  ACCL_CHECK(makePreMulSum(type, scalar, residence == ncclScalarDevice, &dev));

  std::lock_guard<std::mutex> lock(mutex_);
  if (freeHead_ == int(entries_.size())) {
    size_t oldCap = entries_.size();
    size_t newCap = oldCap < size_t(kInitialCapacity) ? size_t(kInitialCapacity) : 2 * oldCap;
    if (newCap > size_t(ncclMaxRedOp) - size_t(ncclNumOps)) {
      return fail(ncclInvalidUsage, "%s: too many live reduction operations (%zu)", kCall, oldCap);
    }
    entries_.resize(newCap);
    for (size_t ix = oldCap; ix < newCap; ++ix) entries_[ix].freeNext = int(ix + 1);
  }
  int ix = freeHead_;
  Entry& e = entries_[ix];
  freeHead_ = e.freeNext;
  e.freeNext = kAllocated;
  e.type = type;
  e.op = dev;
  ++live_;
  *op = mangle(commKey_, ncclRedOp_t(int(ncclNumOps) + ix));
  return ncclSuccess;
}

ncclResult_t RedOpRegistry::destroy(ncclRedOp_t op) {
  constexpr const char* kCall = "ncclRedOpDestroy";
  if (int(op) >= 0 && int(op) < int(ncclNumOps)) {
    return fail(ncclInvalidArgument, "%s: operator %d is a built-in reduction and cannot be destroyed", kCall,
                int(op));
  }
  if (int(op) < 0) return fail(ncclInvalidArgument, "%s: operator %d is not a valid handle", kCall, int(op));
  std::lock_guard<std::mutex> lock(mutex_);
  int ix = liveIndex(op);
  if (ix < 0) {
    return fail(ncclInvalidArgument,
                "%s: operator %d is unknown to this communicator (already destroyed, or created on another one)",
                kCall, int(op));
  }
  entries_[ix].freeNext = freeHead_;
  freeHead_ = ix;
  --live_;
  return ncclSuccess;
}

ncclResult_t RedOpRegistry::resolve(const char* call, ncclRedOp_t op, ncclDataType_t type, int nRanks,
                                    DevRedOp* out) const {
  if (!dtypeValid(type)) return fail(ncclInvalidArgument, "%s: invalid datatype %d", call, int(type));
  if (int(op) < 0) return fail(ncclInvalidArgument, "%s: invalid reduction operation %d", call, int(op));
  if (int(op) < int(ncclNumOps)) return makeDevRedOp(op, type, nRanks, out);
  std::lock_guard<std::mutex> lock(mutex_);
  int ix = liveIndex(op);
  if (ix < 0) {
    return fail(ncclInvalidArgument,
                "%s: reduction operation %d is unknown to this communicator (destroyed, or created on another one)",
                call, int(op));
  }
  const Entry& e = entries_[ix];
  if (e.type != type) {
    return fail(ncclInvalidArgument,
                "%s: reduction operation %d was created for datatype %d (%s) but is used with datatype %d (%s)", call,
                int(op), int(e.type), dtypeName(e.type), int(type), dtypeName(type));
  }
  *out = e.op;
  return ncclSuccess;
}

int RedOpRegistry::liveCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

int RedOpRegistry::capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int(entries_.size());
}

}  // namespace accl
