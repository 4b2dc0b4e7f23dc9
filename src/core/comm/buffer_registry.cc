// The ncclCommRegister table (see buffer_registry.h).
#include "core/comm/buffer_registry.h"

#include <cstdint>
#include <map>
#include <mutex>

#include "util/check.h"

namespace accl {
namespace {

struct Registration {
  ncclComm* comm;
  void* buff;
  size_t size;
};

// Handles look like addresses to the user but are not: a tag in the top bits (never a user-space
// address on x86-64 or AArch64) and a serial number.
constexpr uintptr_t kHandleTag = uintptr_t(0xacc1) << 48;

std::mutex gMutex;
std::map<uintptr_t, Registration> gBuffers;
uintptr_t gNextSerial = 1;

}  // namespace

void* registerBuffer(ncclComm* comm, void* buff, size_t size) {
  std::lock_guard<std::mutex> lock(gMutex);
  uintptr_t handle = kHandleTag | (gNextSerial++ << 4);
  gBuffers[handle] = Registration{comm, buff, size};
  return reinterpret_cast<void*>(handle);
}

ncclResult_t deregisterBuffer(const char* call, ncclComm* comm, void* handle) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (handle == nullptr) return fail(ncclInvalidArgument, "%s: handle is NULL", call);
  auto it = gBuffers.find(reinterpret_cast<uintptr_t>(handle));
  if (it == gBuffers.end())
    return fail(ncclInvalidArgument,
                "%s: handle %p is not a live registration (never returned by ncclCommRegister, or already "
                "deregistered)",
                call, handle);
  if (it->second.comm != comm)
    return fail(ncclInvalidArgument, "%s: handle %p was registered with comm %p, not with comm %p", call, handle,
                static_cast<void*>(it->second.comm), static_cast<void*>(comm));
  gBuffers.erase(it);
  return ncclSuccess;
}

bool findRegisteredBuffer(ncclComm* comm, const void* ptr, size_t bytes, RegisteredRange* out) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
  if (ptr == nullptr || lo + bytes < lo) return false;
  std::lock_guard<std::mutex> lock(gMutex);
  for (const auto& [handle, r] : gBuffers) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(r.buff);
    if (r.comm != comm || r.buff == nullptr || lo < start || lo - start > r.size || lo - start + bytes > r.size ||
        (bytes == 0 && lo - start == r.size))
      continue;
    if (out) *out = RegisteredRange{r.buff, r.size, reinterpret_cast<void*>(handle)};
    return true;
  }
  return false;
}

size_t liveBufferCount(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  size_t n = 0;
  for (const auto& [handle, r] : gBuffers) n += r.comm == comm;
  return n;
}

size_t releaseBuffersOf(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  return std::erase_if(gBuffers, [comm](const auto& entry) { return entry.second.comm == comm; });
}

}  // namespace accl
