// Record I/O over pipes and sockets.
#include "channel.h"

#include <cerrno>
#include <cstddef>
#include <unistd.h>

namespace accl::bench {

bool writeAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= (size_t)n;
  }
  return true;
}

bool readAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= (size_t)n;
  }
  return true;
}

bool writeRecord(int fd, const Record& r) { return writeAll(fd, &r, sizeof(r)); }

ReadStatus readRecord(int fd, Record* r) {
  char* p = reinterpret_cast<char*>(r);
  size_t got = 0;
  while (got < sizeof(*r)) {
    ssize_t n = ::read(fd, p + got, sizeof(*r) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return got == 0 ? ReadStatus::kEof : ReadStatus::kError;
    if (n < 0) return ReadStatus::kError;
    got += (size_t)n;
  }
  return ReadStatus::kOk;
}

}  // namespace accl::bench
