// The profiler plugin ABI as a table of facts (sizes, member offsets, event and state values),
// one per side: accl's declarations (src/profiler/profiler_abi.h) and NVIDIA's headers of the
// example plugin, when the build was pointed at them (ACCL_NVIDIA_PROFILER_INCLUDE_DIR).
#pragma once

#include "abi_table.h"

namespace accl::abi {

Table acclProfilerLayout();
// Empty when the build has no NVIDIA profiler headers.
Table nvidiaProfilerLayout();

}  // namespace accl::abi
