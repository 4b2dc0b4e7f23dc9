// Kernel translation unit 0 of 21: the LL work-item functions of copy collectives, float32, bfloat16 (every built
// collective, op and algorithm; see dev_run.h for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(0)
}  // namespace accl
