// accl::fail(): the single way a user-visible error is raised.
#include "util/check.h"

#include <cstdarg>
#include <cstdio>

namespace accl {

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  logMessage(kLogWarn, ACCL_LOG_ALL, __FILE__, __LINE__, "%s", msg);
  return code;
}

}  // namespace accl
