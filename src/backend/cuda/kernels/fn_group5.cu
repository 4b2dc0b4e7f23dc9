// Kernel translation unit 5 of 6: the work-item functions of int64, uint64 (every built
// collective, op, algorithm; see dev_run.cuh for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(5)
}  // namespace accl
