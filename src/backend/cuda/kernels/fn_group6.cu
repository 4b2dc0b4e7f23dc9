// Kernel translation unit 6 of 21: the LL work-item functions of float8e4m3 (sm_90) (every built
// collective, op and algorithm; see dev_run.h for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(6)
}  // namespace accl
