// User-passed enum arguments (ncclDataType_t, ncclRedOp_t, ncclScalarResidence_t, ...) are read
// as plain integers and range-checked before anything uses them as enums: an out-of-range value
// (say datatype 99 or op -1) must never be loaded as an enum (undefined behaviour, reported by
// UBSan's -fsanitize=enum). Entry points check here first; past the entry every enum is valid.
#pragma once

#include <cstring>

#include "core/engine/group.h"
#include "nccl.h"
#include "util/check.h"

namespace accl {

// The bits of an enum argument as an int, without an enum-typed load.
template <class E>
inline int enumBits(const E& value) {
  static_assert(sizeof(E) == sizeof(int), "enum arguments of the NCCL API are int-sized");
  int bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// ncclInvalidArgument naming `call` unless `type` is in [0, ncclNumTypes). Inside a group the
// failure is latched like every other argument check (the group fails at ncclGroupEnd).
inline ncclResult_t checkDatatypeArg(const char* call, const ncclDataType_t& type) {
  const int t = enumBits(type);
  if (t >= 0 && t < static_cast<int>(ncclNumTypes)) return ncclSuccess;
  ncclResult_t res = fail(ncclInvalidArgument, "%s: datatype %d is invalid (must be in [0, %d))", call, t,
                          static_cast<int>(ncclNumTypes));
  recordGroupError(res);
  return res;
}

// ncclInvalidArgument unless `op` is a built-in op or could be a user op handle (>= 0); whether a
// user op is live on the communicator is the registry's question (RedOpRegistry::resolve).
inline ncclResult_t checkRedOpArg(const char* call, const ncclRedOp_t& op) {
  const int o = enumBits(op);
  if (o >= 0) return ncclSuccess;
  ncclResult_t res = fail(ncclInvalidArgument,
                          "%s: reduction operation %d is invalid (built-ins are [0, %d), user ops come from "
                          "ncclRedOpCreatePreMulSum)",
                          call, o, static_cast<int>(ncclNumOps));
  recordGroupError(res);
  return res;
}

}  // namespace accl
