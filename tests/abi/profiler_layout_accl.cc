// accl's side of the profiler ABI comparison: profiler/profiler_abi.h's declarations.
#include "profiler/profiler_abi.h"
#include "profiler_layout.h"

#include <cstddef>
#include <string>

using namespace accl::prof;

#define DESCR_V1 ProfDescrV1
#define DESCR_V2 ProfDescrV2
#define DESCR_V3 ProfDescrV3
#define DESCR_V4 ProfDescrV4
#define DESCR_V5 ProfDescrV5
#define DESCR_V6 ProfDescrV6
#define DESCR_V7 ProfDescrV7
#define ARGS_V1 ProfStateArgsV1
#define ARGS_V4 ProfStateArgsV5
#define ARGS_V7 ProfStateArgsV7
#define TABLE_V1 ProfilerV1
#define TABLE_V2 ProfilerV2
#define TABLE_V3 ProfilerV3
#define TABLE_V4 ProfilerV4
#define TABLE_V5 ProfilerV5
#define TABLE_V6 ProfilerV6
#define TABLE_V7 ProfilerV7

namespace accl::abi {

Table acclProfilerLayout() {
  Table t;
#include "profiler_layout_rows_body.inc"
#define ACCL_PROF_VALUE(nvidiaName, acclName) \
  t.push_back({"value(" #nvidiaName ")", std::to_string(static_cast<long long>(acclName))});
#include "profiler_layout_rows.inc"
#include "profiler_layout_rows_v7.inc"
  return t;
}

}  // namespace accl::abi
