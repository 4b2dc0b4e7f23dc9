// Runtime-typed reductions for the host backend: one switch over (datatype, DevRedOp kind)
// that runs the typed loops of red_op_apply.h on host memory.
#pragma once

#include <cstddef>

#include "device/common/dev_red_op.h"
#include "device/common/red_op_apply.h"
#include "nccl.h"

namespace accl {

// dst[i] = [postOp] op([preOp] a[i], [preOp] b[i]) for `count` elements of `type`; `steps` is a
// mask of ReduceStep bits (kPreOpA, kPreOpB, kPostOp; see red_op_apply.h for the step order).
// A pointer-resident PreMulSum scalar is read once per call. dst may equal a or b.
// Fails with ncclInternalError for an invalid type or an op/type pair with no kernel.
ncclResult_t reduceBuffers(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type,
                           const DevRedOp& op, unsigned steps = kReducePlain);

// dst[i] = preOp(src[i]): a rank's own contribution as it enters the reduction (a copy for
// ops without a preOp). dst may equal src.
ncclResult_t applyPreOp(void* dst, const void* src, size_t count, ncclDataType_t type, const DevRedOp& op);

// dst[i] = postOp(src[i]): the final result (a copy for ops without a postOp). dst may equal src.
ncclResult_t applyPostOp(void* dst, const void* src, size_t count, ncclDataType_t type, const DevRedOp& op);

}  // namespace accl
