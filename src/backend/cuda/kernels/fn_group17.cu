// Kernel translation unit 17 of 21: the Simple work-item functions of int32, uint32 (every built
// collective, op and algorithm; see dev_run.h for the grouping and dev_func.h for the set).
#include "backend/cuda/kernels/dev_run.h"

namespace accl {
ACCL_DEFINE_FILL_GROUP(17)
}  // namespace accl
