// Logging in NCCL's line format, driven by NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE.
// Existing log tooling greps for "NCCL INFO" / "NCCL WARN", so the format is kept; the
// implementation and the text of the messages are accl's own.
#pragma once

#include <cstdarg>
#include <cstdint>

namespace accl {

enum LogLevel : int {
  kLogNone = 0,
  kLogVersion = 1,
  kLogWarn = 2,
  kLogInfo = 3,
  kLogAbort = 4,
  kLogTrace = 5,
};

// Subsystem bits, same values as NCCL's so NCCL_DEBUG_SUBSYS means the same thing.
enum LogSubsys : uint64_t {
  ACCL_LOG_INIT = 0x1,
  ACCL_LOG_COLL = 0x2,
  ACCL_LOG_P2P = 0x4,
  ACCL_LOG_SHM = 0x8,
  ACCL_LOG_NET = 0x10,
  ACCL_LOG_GRAPH = 0x20,
  ACCL_LOG_TUNING = 0x40,
  ACCL_LOG_ENV = 0x80,
  ACCL_LOG_ALLOC = 0x100,
  ACCL_LOG_CALL = 0x200,
  ACCL_LOG_PROXY = 0x400,
  ACCL_LOG_NVLS = 0x800,
  ACCL_LOG_BOOTSTRAP = 0x1000,
  ACCL_LOG_REG = 0x2000,
  ACCL_LOG_PROFILE = 0x4000,
  ACCL_LOG_RAS = 0x8000,
  ACCL_LOG_ALL = ~0ull,
};

// Writes one log line if `level`/`subsys` are enabled. WARN lines are also stored as the
// process-wide last error (ncclGetLastError).
void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// The logger accl hands to plugins (tuner, profiler: NCCL's ncclDebugLogger_t shape): a plugin's
// line goes through logMessage with the plugin's own level and subsystem bits; `origin` names
// the plugin kind when it passes no file.
void pluginLogMessage(const char* origin, int level, unsigned long flags, const char* file, int line,
                      const char* fmt, va_list ap);
// That logger as a function to hand a plugin, for one origin (a static string).
template <const char* kOrigin>
void pluginLogger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pluginLogMessage(kOrigin, level, flags, file, line, fmt, ap);
  va_end(ap);
}

// Current level, after lazily parsing the environment once per process.
LogLevel logLevel();

// Forget the parsed settings so the next message re-reads the environment (ncclResetDebugInit).
void resetLogSettings();

// Prints the version banner once per process ("NCCL version 2.32.3+accl").
void logVersionBannerOnce();

}  // namespace accl

#define ACCL_WARN(...) ::accl::logMessage(::accl::kLogWarn, ::accl::ACCL_LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define ACCL_INFO(subsys, ...)                                                     \
  do {                                                                             \
    if (::accl::logLevel() >= ::accl::kLogInfo)                                    \
      ::accl::logMessage(::accl::kLogInfo, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define ACCL_TRACE(subsys, ...)                                                     \
  do {                                                                              \
    if (::accl::logLevel() >= ::accl::kLogTrace)                                    \
      ::accl::logMessage(::accl::kLogTrace, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
