// Kernel translation unit 19 of 21: the LL128 work-item functions of int64, uint64 (every built
// collective, op and algorithm; see dev_run.h for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(19)
}  // namespace accl
