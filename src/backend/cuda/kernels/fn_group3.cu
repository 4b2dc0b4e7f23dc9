// Kernel translation unit 3 of 6: the work-item functions of int8, uint8 (every built
// collective, op, algorithm; see dev_run.cuh for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(3)
}  // namespace accl
