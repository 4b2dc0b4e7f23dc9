// NVIDIA's side of the profiler ABI comparison: the example plugin's headers (nccl/err.h,
// nccl/profiler.h), found in ACCL_NVIDIA_PROFILER_INCLUDE_DIR when the build was given one;
// otherwise an empty table. Headers older than v7 give the rows up to v6 only. Nothing of
// NVIDIA's is kept in this repository.
#include "profiler_layout.h"

#include <cstddef>
#include <string>

#ifdef ACCL_HAVE_NVIDIA_PROFILER_HEADERS
#include <sys/types.h>

#include <cstdint>

#include "err.h"
#include "profiler.h"

#define DESCR_V1 ncclProfilerEventDescr_v1_t
#define DESCR_V2 ncclProfilerEventDescr_v2_t
#define DESCR_V3 ncclProfilerEventDescr_v3_t
#define DESCR_V4 ncclProfilerEventDescr_v4_t
#define DESCR_V5 ncclProfilerEventDescr_v5_t
#define DESCR_V6 ncclProfilerEventDescr_v6_t
#define ARGS_V1 ncclProfilerEventStateArgs_v1_t
#define ARGS_V4 ncclProfilerEventStateArgs_v4_t
#define TABLE_V1 ncclProfiler_v1_t
#define TABLE_V2 ncclProfiler_v2_t
#define TABLE_V3 ncclProfiler_v3_t
#define TABLE_V4 ncclProfiler_v4_t
#define TABLE_V5 ncclProfiler_v5_t
#define TABLE_V6 ncclProfiler_v6_t
#ifdef PROFILER_V7_H_
#define DESCR_V7 ncclProfilerEventDescr_v7_t
#define ARGS_V7 ncclProfilerEventStateArgs_v7_t
#define TABLE_V7 ncclProfiler_v7_t
#endif
#endif

namespace accl::abi {

Table nvidiaProfilerLayout() {
  Table t;
#ifdef ACCL_HAVE_NVIDIA_PROFILER_HEADERS
#include "profiler_layout_rows_body.inc"
#define ACCL_PROF_VALUE(nvidiaName, acclName) \
  t.push_back({"value(" #nvidiaName ")", std::to_string(static_cast<long long>(nvidiaName))});
#include "profiler_layout_rows.inc"
#ifdef PROFILER_V7_H_  // headers of NCCL 2.31 or later
#include "profiler_layout_rows_v7.inc"
#endif
#endif
  return t;
}

}  // namespace accl::abi
