// Error propagation inside accl: every internal boundary returns ncclResult_t.
// ACCL_CHECK returns the failure upwards with an INFO back-trace line; accl::fail() is how a
// user-visible error is raised (WARN line + ncclGetLastError text that names the call and value).
#pragma once

#include <cerrno>
#include <cstring>

#include "nccl.h"
#include "util/log.h"

namespace accl {

// Logs `fmt` as a WARN (which also sets ncclGetLastError) and returns `code`.
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace accl

#define ACCL_CHECK(expr)                                                            \
  do {                                                                              \
    ncclResult_t accl_res_ = (expr);                                                \
    if (accl_res_ != ncclSuccess && accl_res_ != ncclInProgress) {                  \
      ACCL_INFO(::accl::ACCL_LOG_ALL, "%s:%d -> %d", __FILE__, __LINE__, (int)accl_res_); \
      return accl_res_;                                                             \
    }                                                                               \
  } while (0)

#define ACCL_CHECK_GOTO(expr, res, label)                                           \
  do {                                                                              \
    (res) = (expr);                                                                 \
    if ((res) != ncclSuccess && (res) != ncclInProgress) {                          \
      ACCL_INFO(::accl::ACCL_LOG_ALL, "%s:%d -> %d", __FILE__, __LINE__, (int)(res)); \
      goto label;                                                                   \
    }                                                                               \
  } while (0)

// For syscalls that return -1 and set errno.
#define ACCL_SYSCHECK(call, name)                                                   \
  do {                                                                              \
    if ((call) == -1) {                                                             \
      int accl_err_ = errno;                                                        \
      return ::accl::fail(ncclSystemError, "%s failed: %s", (name), strerror(accl_err_)); \
    }                                                                               \
  } while (0)
