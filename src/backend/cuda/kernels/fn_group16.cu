// Kernel translation unit 16 of 21: the LL128 work-item functions of int32, uint32 (every built
// collective, op and algorithm; see dev_run.h for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(16)
}  // namespace accl
