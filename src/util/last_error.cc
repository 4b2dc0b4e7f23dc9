// Storage for ncclGetLastError(): one process-wide message behind a mutex.
#include "util/last_error.h"

#include <cstring>
#include <mutex>
#include <string>

namespace accl {
namespace {

std::mutex& errorMutex() {
  static std::mutex m;
  return m;
}

std::string& errorText() {
  static std::string text;
  return text;
}

thread_local bool tKeepLastError = false;

}  // namespace

void keepLastErrorOnThisThread() { tKeepLastError = true; }

void setLastError(const char* message) {
  if (tKeepLastError) return;
  std::lock_guard<std::mutex> lock(errorMutex());
  errorText() = message ? message : "";
}

const char* lastErrorText() {
  thread_local char copy[1024];
  std::lock_guard<std::mutex> lock(errorMutex());
  std::strncpy(copy, errorText().c_str(), sizeof(copy) - 1);
  copy[sizeof(copy) - 1] = '\0';
  return copy;
}

}  // namespace accl
