// The exit-status convention of every accl command-line tool (accl-info, accl-perf, accl-topo,
// accl-tune, accl-comm-demo, accl-ras; docs/tools.md) and the helpers that report a bad command
// line the same way in each: the option, the value given and why it is refused.
//
//   0  success (and --help)
//   1  the run failed (a library error, a file that cannot be read, a rank that failed, ...)
//   2  bad usage: an unknown option, a missing or malformed value, or values that contradict
//      each other; nothing was run
//
// accl-perf refines "the run failed" with nccl-tests' result codes (3 library error, 4 timeout,
// 5 not implemented, 7 wrong data), so scripts written for nccl-tests keep working.
// Header-only: the tools share it without a library of their own.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace accl::cli {

enum ExitStatus : int {
  kExitOk = 0,
  kExitRunFailed = 1,
  kExitUsage = 2,
};

// Prints "<tool>: <message>" and a pointer to --help on stderr; returns kExitUsage, so a parser
// can `return usageError(...)`.
[[gnu::format(printf, 2, 3)]] inline int usageError(const char* tool, const char* fmt, ...) {
  std::fprintf(stderr, "%s: ", tool);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, " (see %s --help)\n", tool);
  return kExitUsage;
}

// "<tool>: bad value 'VALUE' for OPTION: REASON (see <tool> --help)"; returns kExitUsage.
inline int badValue(const char* tool, const std::string& option, const char* value, const std::string& reason) {
  return usageError(tool, "bad value '%s' for %s: %s", value ? value : "", option.c_str(), reason.c_str());
}

// The whole of `text` as a base-10 integer in [lo, hi]. On failure *why says what is wrong with
// it ("is not an integer", "must be at least 1", ...), for badValue.
inline bool parseInt(const char* text, long lo, long hi, long* out, std::string* why) {
  if (text == nullptr || *text == '\0') {
    *why = "an integer is needed";
    return false;
  }
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0') {
    *why = "not an integer";
    return false;
  }
  if (errno == ERANGE || v < lo || v > hi) {
    if (hi == lo)
      *why = "must be " + std::to_string(lo);
    else if (v < lo)
      *why = "must be at least " + std::to_string(lo);
    else
      *why = "must be at most " + std::to_string(hi);
    return false;
  }
  *out = v;
  return true;
}

// The whole of `text` as a finite number > lowerExclusive.
inline bool parsePositive(const char* text, double lowerExclusive, double* out, std::string* why) {
  char* end = nullptr;
  double v = text ? std::strtod(text, &end) : 0;
  if (text == nullptr || end == text || *end != '\0' || !std::isfinite(v)) {
    *why = "not a number";
    return false;
  }
  if (!(v > lowerExclusive)) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "must be greater than %g", lowerExclusive);
    *why = buf;
    return false;
  }
  *out = v;
  return true;
}

}  // namespace accl::cli
