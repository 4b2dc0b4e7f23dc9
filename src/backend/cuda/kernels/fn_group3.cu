// Kernel translation unit 3 of 21: the LL work-item functions of float16, float64 (every built
// collective, op and algorithm; see dev_run.h for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(3)
}  // namespace accl
