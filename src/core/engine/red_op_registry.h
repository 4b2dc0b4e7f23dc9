// Per-communicator table of user-created reduction ops (ncclRedOpCreatePreMulSum /
// ncclRedOpDestroy) and the resolution of any ncclRedOp_t a collective is called with into the
// DevRedOp a backend runs.
//
// Handles: entry ix of the table has the raw value ncclNumOps + ix. The value handed to the user
// is that raw value XOR-ed with a 31-bit hash of the communicator's address (the same mangling
// NCCL applies), except when the XOR would land on a built-in value, in which case the raw value
// is used as is; the mapping is its own inverse. So a handle created on one communicator almost
// surely decodes to a non-existent entry on another and is rejected. Freed entries go on a LIFO
// free list and are reused by the next create; the table starts at 4 entries and doubles.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "device/common/dev_red_op.h"
#include "nccl.h"

namespace accl {

// The name of a built-in reduction ("sum"), for messages; `otherwise` for user-created ops.
inline const char* builtinRedOpName(int op, const char* otherwise) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return otherwise;
  }
}

class RedOpRegistry {
 public:
  // `commKey` is the address of the owning communicator; it only seeds the handle mangling.
  explicit RedOpRegistry(const void* commKey);
  RedOpRegistry(const RedOpRegistry&) = delete;
  RedOpRegistry& operator=(const RedOpRegistry&) = delete;

  // ncclRedOpCreatePreMulSum: a new op multiplying each contribution by `scalar` (of `type`)
  // before summing. ncclScalarHostImmediate copies the element now; ncclScalarDevice keeps the
  // pointer and the element is read each time the op runs.
  ncclResult_t createPreMulSum(ncclRedOp_t* op, const void* scalar, ncclDataType_t type,
                               ncclScalarResidence_t residence);

  // ncclRedOpDestroy: fails with ncclInvalidArgument for a built-in op, a negative value, or an
  // op that is not live on this communicator (never created here, or already destroyed).
  ncclResult_t destroy(ncclRedOp_t op);

  // The descriptor for a collective `call` (used in error messages, e.g. "ncclAllReduce") with
  // `op` on `type` over `nRanks` ranks: built-ins through makeDevRedOp, user ops from the table.
  // ncclInvalidArgument for an invalid type, an unknown op, or a user op of another datatype.
  ncclResult_t resolve(const char* call, ncclRedOp_t op, ncclDataType_t type, int nRanks, DevRedOp* out) const;

  // Number of live user ops, and current table size (for tests and diagnostics).
  int liveCount() const;
  int capacity() const;

  // The communicator-specific handle of a raw value (and back: the mapping is an involution).
  // Values below ncclNumOps are returned unchanged.
  static ncclRedOp_t mangle(const void* commKey, ncclRedOp_t op);

 private:
  static constexpr int kAllocated = -1;
  static constexpr int kInitialCapacity = 4;

  struct Entry {
    int freeNext = 0;  // next free index, or kAllocated while the op is live
    ncclDataType_t type = ncclFloat32;
    DevRedOp op;
  };

  // Index of the live entry `op` names, or -1.
  int liveIndex(ncclRedOp_t op) const;

  const void* commKey_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  int freeHead_ = 0;  // == entries_.size() when no entry is free
  int live_ = 0;
};

}  // namespace accl
