// The table of live memory windows (see window_registry.h).
#include "core/comm/window_registry.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "util/check.h"

namespace accl {
namespace {

std::mutex gMutex;
// Key: the handle given to the user; the value owns the registration it points to.
std::unordered_map<ncclWindow_t, std::unique_ptr<ncclWindow_vidmem>> gWindows;

// Finds win for comm with gMutex held; an error names why not.
ncclResult_t findLocked(const char* call, ncclComm* comm, ncclWindow_t win, ncclWindow_vidmem** out) {
  if (win == nullptr) return fail(ncclInvalidArgument, "%s: window is NULL", call);
  auto it = gWindows.find(win);
  if (it == gWindows.end())
    return fail(ncclInvalidArgument, "%s: window %p is not registered (never, or already deregistered)", call,
                (void*)win);
  if (it->second->comm != comm)
    return fail(ncclInvalidArgument, "%s: window %p belongs to comm %p, not comm %p", call, (void*)win,
                (void*)it->second->comm, (void*)comm);
  *out = it->second.get();
  return ncclSuccess;
}

}  // namespace

ncclWindow_t registerWindow(ncclComm* comm, void* buff, size_t size, int flags) {
  auto w = std::make_unique<ncclWindow_vidmem>(ncclWindow_vidmem{comm, buff, size, flags});
  ncclWindow_t handle = w.get();
  std::lock_guard<std::mutex> lock(gMutex);
  gWindows.emplace(handle, std::move(w));
  return handle;
}

ncclResult_t deregisterWindow(const char* call, ncclComm* comm, ncclWindow_t win) {
  std::lock_guard<std::mutex> lock(gMutex);
  ncclWindow_vidmem* w = nullptr;
  ACCL_CHECK(findLocked(call, comm, win, &w));
  gWindows.erase(win);
  return ncclSuccess;
}

ncclResult_t lookupWindow(const char* call, ncclComm* comm, ncclWindow_t win, WindowInfo* out) {
  std::lock_guard<std::mutex> lock(gMutex);
  ncclWindow_vidmem* w = nullptr;
  ACCL_CHECK(findLocked(call, comm, win, &w));
  *out = *w;
  return ncclSuccess;
}

bool findWindowCovering(ncclComm* comm, const void* ptr, size_t bytes, WindowInfo* out) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
  if (ptr == nullptr || lo + bytes < lo) return false;
  std::lock_guard<std::mutex> lock(gMutex);
  for (const auto& [handle, w] : gWindows) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(w->buff);
    if (w->comm != comm || w->buff == nullptr || lo < start || lo - start > w->size || lo - start + bytes > w->size ||
        (bytes == 0 && lo - start == w->size))
      continue;
    if (out) *out = *w;
    return true;
  }
  return false;
}

size_t liveWindowCount(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  size_t n = 0;
  for (const auto& [handle, w] : gWindows) n += w->comm == comm;
  return n;
}

size_t releaseWindowsOf(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  return std::erase_if(gWindows, [comm](const auto& entry) { return entry.second->comm == comm; });
}

}  // namespace accl
