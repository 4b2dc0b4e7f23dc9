// strFormat: printf-style formatting into a std::string (the consistency check's messages, the
// accl-ras report).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace accl {

inline std::string strFormat(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline std::string strFormat(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char small[256];
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(small, sizeof(small), format, copy);
  va_end(copy);
  std::string out;
  if (n < 0) {
    out = format;
  } else if (static_cast<size_t>(n) < sizeof(small)) {
    out.assign(small, n);
  } else {
    out.resize(n + 1);
    vsnprintf(out.data(), out.size(), format, args);
    out.resize(n);
  }
  va_end(args);
  return out;
}

}  // namespace accl
