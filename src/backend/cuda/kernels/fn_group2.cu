// Kernel translation unit 2 of 6: the work-item functions of float8e4m3, float8e5m2 (sm_90) (every built
// collective, op, algorithm; see dev_run.cuh for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(2)
}  // namespace accl
