// The virtual GPU's memory: device memory (cudaMalloc / cudaFree, carved from one shareable memfd
// arena per device), pinned and registered host memory, legacy IPC handles, and the registry of
// every live range that findRange, copyChecked and setChecked (vgpu.h) and cuMem (vgpu/cumem.cc,
// through memory_registry.h) consult.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>
#include <vector>

#include "vgpu/memory_registry.h"
#include "vgpu/vgpu.h"

#ifndef VGPU_API
#define VGPU_API extern "C" __attribute__((visibility("default")))
#endif

namespace accl::vgpu {
namespace {

constexpr size_t kLargeAlign = size_t{2} << 20;  // cudaMalloc of 2 MiB or more: 2 MiB aligned, as on a GPU

size_t pageSize() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

// Rounds n up to a multiple of a (a power of two); 0 when that overflows.
size_t roundUp(size_t n, size_t a) { return n > SIZE_MAX - (a - 1) ? 0 : (n + a - 1) & ~(a - 1); }

// Where a live range came from: what may free it and how.
enum class Origin { kMalloc, kCuMem, kHostAlloc, kHostRegister, kIpcOpen };

// The key an opened IPC handle is shared under within this process.
using IpcKey = std::tuple<uint32_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>;  // pid, dev, ino, offset, bytes, generation

struct Entry {
  MemRange range;           // range.bytes: what the caller asked for
  Origin origin = Origin::kMalloc;
  uintptr_t joinTag = 0;    // see addRange
  bool readOnly = false;    // device writes are refused (cuMem read access, cudaHostRegisterReadOnly)
  unsigned flags = 0;       // cudaHostAlloc / cudaHostRegister flags
  size_t mappedBytes = 0;   // pages behind the range (arena chunk, pinned or IPC mapping)
  size_t arenaOffset = 0;   // kMalloc
  uint64_t generation = 0;  // kMalloc: tells a reused offset's handle from the old one's
  int ipcRefs = 0;          // kIpcOpen: opens not yet closed
  int ipcOpener = 0;        // kIpcOpen: the device current when it was opened
  IpcKey ipcKey{};
};

// One device's arena: a sparse memfd as large as the device, mapped once; cudaMalloc carves
// page-aligned chunks from it so an IPC opener can map exactly one chunk.
struct Arena {
  int fd = -1;
  char* base = nullptr;
  size_t size = 0;
  pid_t owner = 0;
  uint64_t st_dev = 0, st_ino = 0;
  std::map<size_t, size_t> freeList;  // offset -> length, coalesced
};

struct State {
  std::mutex mu;
  std::map<uintptr_t, Entry> ranges;        // live ranges by base address
  std::map<IpcKey, uintptr_t> ipcOpen;      // opened handles -> their mapping
  std::vector<std::unique_ptr<Arena>> arenas;  // by device ordinal, made on first cudaMalloc
  std::vector<size_t> charged;              // device bytes in use, by ordinal
  uint64_t nextGeneration = 1;
  State();
};

State& state() {
  static State* s = new State;  // never destroyed: frees may run during static teardown
  return *s;
}

// The device budget (memory_registry.h), kept under the registry's lock.
bool chargeLocked(State& s, int dev, size_t bytes) {
  const DeviceInfo* d = device(dev);
  if (d == nullptr) return false;
  if (s.charged.size() <= size_t(dev)) s.charged.resize(size_t(dev) + 1, 0);
  if (bytes > d->memoryBytes - std::min(s.charged[dev], d->memoryBytes)) return false;
  s.charged[dev] += bytes;
  return true;
}

void unchargeLocked(State& s, int dev, size_t bytes) {
  if (size_t(dev) < s.charged.size()) s.charged[dev] -= std::min(s.charged[dev], bytes);
}

// A forked child must not carve from (or punch holes into) the parent's arena, which it shares:
// like CUDA, it starts without the parent's device allocations.
void forgetInheritedArenas() {
  State& s = state();
  for (auto it = s.ranges.begin(); it != s.ranges.end();) {
    if (it->second.origin == Origin::kMalloc) {
      unchargeLocked(s, it->second.range.device, it->second.mappedBytes);
      it = s.ranges.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& a : s.arenas) {
    if (!a) continue;
    munmap(a->base, a->size);
    close(a->fd);
    a.reset();
  }
}

State::State() {
  // The registry's lock is held across fork() so a child never inherits it locked.
  pthread_atfork([] { state().mu.lock(); }, [] { state().mu.unlock(); },
                 [] {
                   forgetInheritedArenas();
                   state().mu.unlock();
                 });
}

// ---- the registry (caller holds State::mu) ------------------------------------------------------

// The entry whose range contains p, or end().
std::map<uintptr_t, Entry>::iterator entryAt(State& s, const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = s.ranges.upper_bound(a);
  if (it == s.ranges.begin()) return s.ranges.end();
  --it;
  return a - it->first < it->second.range.bytes ? it : s.ranges.end();
}

bool overlapsLive(State& s, uintptr_t base, size_t bytes, std::map<uintptr_t, Entry>::iterator* hit) {
  auto it = s.ranges.lower_bound(base + bytes);  // first range starting at or past our end
  if (it == s.ranges.begin()) return false;
  --it;
  if (it->first + it->second.range.bytes > base) {
    if (hit) *hit = it;
    return true;
  }
  return false;
}

// Finds [p, p + bytes) inside one range, or inside a run of adjacent ranges with one join tag.
bool locate(State& s, const void* p, size_t bytes, MemRange* out, bool* writable) {
  if (p == nullptr) return false;
  auto it = entryAt(s, p);
  if (it == s.ranges.end()) return false;
  MemRange r = it->second.range;
  bool ro = it->second.readOnly;
  const uintptr_t want = reinterpret_cast<uintptr_t>(p) + bytes;
  if (bytes > 0 && want < reinterpret_cast<uintptr_t>(p)) return false;  // wraps around
  const uintptr_t tag = it->second.joinTag;
  uintptr_t end = it->first + r.bytes;
  while (end < want && tag != 0) {
    auto next = std::next(it);
    if (next == s.ranges.end() || next->first != end || next->second.joinTag != tag) break;
    it = next;
    end += it->second.range.bytes;
    ro = ro || it->second.readOnly;
  }
  if (end < want) return false;
  r.bytes = end - reinterpret_cast<uintptr_t>(r.base);  // the joined run, when it took more than one
  if (out) *out = r;
  if (writable) *writable = !ro;
  return true;
}

// ---- small helpers ------------------------------------------------------------------------------

template <class F>
cudaError_t guarded(const char* call, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return failCall(call, cudaErrorMemoryAllocation, "out of host memory for the stand-in's bookkeeping");
  } catch (...) {
    return failCall(call, cudaErrorUnknown, "unexpected internal exception");
  }
}

// The current device, or the error that says why there is none.
cudaError_t currentOrdinal(const char* call, int* dev) {
  *dev = currentDevice();
  if (device(*dev) != nullptr) return cudaSuccess;
  if (deviceCount() == 0) return failCall(call, cudaErrorNoDevice, "the virtual GPU has no devices (ACCL_VGPU_COUNT=0)");
  return failCall(call, cudaErrorInvalidDevice, "current device %d does not exist", *dev);
}

void syncAllDevices() {
  for (int d = 0; d < deviceCount(); ++d) syncDeviceImplicit(d);
}

// ---- the device arena ---------------------------------------------------------------------------

// Maps `fd` shared at an `align`-aligned address (so offsets aligned in the arena are aligned in
// memory too): a larger placeholder first, the file over its aligned middle, the slack returned.
void* mapAligned(int fd, size_t size, size_t align) {
  void* raw = mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (r + align - 1) & ~uintptr_t(align - 1);
  void* p = mmap(reinterpret_cast<void*>(start), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    munmap(raw, size + align);
    return MAP_FAILED;
  }
  if (start > r) munmap(raw, start - r);
  if (r + align > start) munmap(reinterpret_cast<void*>(start + size), r + align - start);
  return p;
}

Arena* openArena(int dev, size_t size) {
  char name[48];
  std::snprintf(name, sizeof name, "accl-vgpu-arena-dev%d", dev);
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  void* base = MAP_FAILED;
  if (ftruncate(fd, off_t(size)) == 0 && fstat(fd, &st) == 0) base = mapAligned(fd, size, kLargeAlign);
  if (base == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  auto* a = new Arena;
  a->fd = fd;
  a->base = static_cast<char*>(base);
  a->size = size;
  a->owner = getpid();
  a->st_dev = st.st_dev;
  a->st_ino = st.st_ino;
  a->freeList[0] = size;
  return a;
}

// The calling process's arena of `dev` (made on first use); null when the OS refuses one.
Arena* arenaOf(State& s, int dev) {
  if (s.arenas.size() <= size_t(dev)) s.arenas.resize(size_t(dev) + 1);
  if (!s.arenas[dev]) {
    const size_t size = roundUp(device(dev)->memoryBytes, kLargeAlign);
    s.arenas[dev].reset(openArena(dev, size));
  }
  return s.arenas[dev].get();
}

// First fit of `bytes` at `align` from the free list.
bool carve(Arena& a, size_t bytes, size_t align, size_t* offset) {
  for (auto it = a.freeList.begin(); it != a.freeList.end(); ++it) {
    const size_t blockStart = it->first, blockEnd = it->first + it->second;
    const size_t start = roundUp(blockStart, align);
    if (start < blockStart || start > blockEnd || blockEnd - start < bytes) continue;
    a.freeList.erase(it);
    if (start > blockStart) a.freeList[blockStart] = start - blockStart;
    if (start + bytes < blockEnd) a.freeList[start + bytes] = blockEnd - start - bytes;
    *offset = start;
    return true;
  }
  return false;
}

// Returns a chunk (its pages already punched out) to the free list, merged with its neighbours.
void giveBack(Arena& a, size_t offset, size_t bytes) {
  size_t start = offset, len = bytes;
  auto next = a.freeList.lower_bound(offset);
  if (next != a.freeList.end() && next->first == offset + bytes) {
    len += next->second;
    next = a.freeList.erase(next);
  }
  if (next != a.freeList.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      a.freeList.erase(prev);
    }
  }
  a.freeList[start] = len;
}

cudaError_t deviceAlloc(void** devPtr, size_t size) {
  int dev;
  if (cudaError_t e = currentOrdinal("cudaMalloc", &dev)) return e;
  const bool large = size >= kLargeAlign;
  const size_t align = large ? kLargeAlign : pageSize();
  const size_t chunk = roundUp(size, align);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (chunk == 0 || !chargeLocked(s, dev, chunk))
    return failCall("cudaMalloc", cudaErrorMemoryAllocation, "%zu bytes on device %d: %zu of %zu bytes in use", size,
                    dev, size_t(dev) < s.charged.size() ? s.charged[dev] : 0, device(dev)->memoryBytes);
  Arena* a = arenaOf(s, dev);
  size_t offset = 0;
  if (a == nullptr || !carve(*a, chunk, align, &offset)) {
    unchargeLocked(s, dev, chunk);
    return failCall("cudaMalloc", cudaErrorMemoryAllocation, "%zu bytes on device %d: %s", size, dev,
                    a == nullptr ? "no memfd arena (memfd_create / ftruncate / mmap failed)" : "arena fragmented");
  }
  Entry e;
  e.range = MemRange{a->base + offset, size, MemKind::kDevice, dev};
  e.origin = Origin::kMalloc;
  e.mappedBytes = chunk;
  e.arenaOffset = offset;
  e.generation = s.nextGeneration++;
  try {
    s.ranges.emplace(reinterpret_cast<uintptr_t>(e.range.base), e);
  } catch (...) {
    giveBack(*a, offset, chunk);
    unchargeLocked(s, dev, chunk);
    throw;
  }
  *devPtr = a->base + offset;
  return cudaSuccess;
}

// Takes the live range at `base` made by `origin` out of the registry (after the implicit
// synchronisation, which runs without the lock); false when another thread took it first.
bool takeEntry(const void* base, Origin origin, Entry* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.ranges.find(reinterpret_cast<uintptr_t>(base));
  if (it == s.ranges.end() || it->second.origin != origin) return false;
  *out = it->second;
  s.ranges.erase(it);
  return true;
}

// The origin and device of the live range whose base is `p`; false when p is no such base.
bool baseOf(const void* p, Origin origin, Entry* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.ranges.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.ranges.end() || it->second.origin != origin) return false;
  *out = it->second;
  return true;
}

void releaseChunk(const Entry& e) {
  State& s = state();
  const int dev = e.range.device;
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (size_t(dev) < s.arenas.size() && s.arenas[dev]) fd = s.arenas[dev]->fd;
  }
  // Pages go back to the OS before the chunk can be carved again (zero on reuse, as arenas start).
  if (fd >= 0) fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(e.arenaOffset), off_t(e.mappedBytes));
  std::lock_guard<std::mutex> lock(s.mu);
  if (size_t(dev) < s.arenas.size() && s.arenas[dev]) giveBack(*s.arenas[dev], e.arenaOffset, e.mappedBytes);
  unchargeLocked(s, dev, e.mappedBytes);
}

// ---- pinned and registered host memory ----------------------------------------------------------

cudaError_t hostAlloc(const char* call, void** pHost, size_t size, unsigned flags) {
  if (cudaError_t e = checkCaptureForbidden(call)) return e;
  if (pHost == nullptr) return failCall(call, cudaErrorInvalidValue, "the output pointer is null");
  constexpr unsigned kKnown = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if (flags & ~kKnown) return failCall(call, cudaErrorInvalidValue, "unknown flags 0x%x", flags);
  if (size == 0) {
    *pHost = nullptr;
    return cudaSuccess;
  }
  const size_t bytes = roundUp(size, pageSize());
  void* p = bytes == 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return failCall(call, cudaErrorMemoryAllocation, "%zu bytes of pinned host memory", size);
  Entry e;
  e.range = MemRange{static_cast<const char*>(p), size, MemKind::kHostPinned, currentDevice()};
  e.origin = Origin::kHostAlloc;
  e.flags = flags;
  e.mappedBytes = bytes;
  State& s = state();
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    s.ranges.emplace(reinterpret_cast<uintptr_t>(p), e);
  } catch (...) {
    munmap(p, bytes);
    throw;
  }
  *pHost = p;
  return cudaSuccess;
}

// True when every page of [p, p + size) is mapped in this process.
bool isMapped(const void* p, size_t size) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(pageSize() - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + size;
  if (end < start) return false;
  return msync(reinterpret_cast<void*>(start), end - start, MS_ASYNC) == 0 || errno != ENOMEM;
}

cudaError_t hostRegister(void* ptr, size_t size, unsigned flags) {
  const char* call = "cudaHostRegister";
  if (ptr == nullptr || size == 0) return failCall(call, cudaErrorInvalidValue, "%p, %zu bytes", ptr, size);
  constexpr unsigned kKnown =
      cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
  if (flags & ~kKnown) return failCall(call, cudaErrorInvalidValue, "unknown flags 0x%x", flags);
  if (flags & cudaHostRegisterIoMemory) return refuse("cudaHostRegister(cudaHostRegisterIoMemory)");
  if (!isMapped(ptr, size))
    return failCall(call, cudaErrorInvalidValue, "%p + %zu bytes is not mapped memory of this process", ptr, size);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  std::map<uintptr_t, Entry>::iterator hit;
  if (overlapsLive(s, reinterpret_cast<uintptr_t>(ptr), size, &hit)) {
    const MemKind k = hit->second.range.kind;
    if (k == MemKind::kHostPinned || k == MemKind::kHostRegistered)
      return failCall(call, cudaErrorHostMemoryAlreadyRegistered, "%p + %zu bytes overlaps %p + %zu bytes", ptr, size,
                      hit->second.range.base, hit->second.range.bytes);
    return failCall(call, cudaErrorInvalidValue, "%p + %zu bytes overlaps device memory at %p", ptr, size,
                    hit->second.range.base);
  }
  Entry e;
  e.range = MemRange{static_cast<const char*>(ptr), size, MemKind::kHostRegistered, currentDevice()};
  e.origin = Origin::kHostRegister;
  e.flags = flags;
  e.readOnly = (flags & cudaHostRegisterReadOnly) != 0;
  s.ranges.emplace(reinterpret_cast<uintptr_t>(ptr), e);
  return cudaSuccess;
}

// ---- legacy IPC handles -------------------------------------------------------------------------

// What a cudaIpcMemHandle_t carries: where the owner's arena chunk is and which allocation it was.
struct IpcWire {
  uint32_t magic;
  uint32_t pid;
  int32_t fd;
  int32_t device;
  uint64_t offset;
  uint64_t bytes;       // as asked of cudaMalloc
  uint64_t generation;
  uint64_t st_dev;
  uint64_t st_ino;
  uint32_t chunkPages;  // the mapping's length in pages
  uint32_t check;       // a hash of the rest: garbage is told from a handle
};
static_assert(sizeof(IpcWire) == CUDA_IPC_HANDLE_SIZE, "the wire form fills cudaIpcMemHandle_t");
constexpr uint32_t kIpcMagic = 0x41564d48;  // "AVMH"

uint32_t wireCheck(const IpcWire& w) {
  const auto* b = reinterpret_cast<const unsigned char*>(&w);
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < offsetof(IpcWire, check); ++i) h = (h ^ b[i]) * 16777619u;
  return h;
}

IpcKey keyOf(const IpcWire& w) { return IpcKey{w.pid, w.st_dev, w.st_ino, w.offset, w.bytes, w.generation}; }

// Maps the owner's chunk through /proc/<pid>/fd/<fd>; null (with the error set) when it cannot.
void* mapForeignChunk(const IpcWire& w, size_t chunk, cudaError_t* err) {
  const char* call = "cudaIpcOpenMemHandle";
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/fd/%d", unsigned(w.pid), int(w.fd));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *err = failCall(call, cudaErrorInvalidResourceHandle, "cannot open %s (the exporting process is gone?): %s", path,
                    std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  void* p = MAP_FAILED;
  if (fstat(fd, &st) != 0 || uint64_t(st.st_dev) != w.st_dev || uint64_t(st.st_ino) != w.st_ino ||
      uint64_t(st.st_size) < w.offset + chunk) {
    *err = failCall(call, cudaErrorInvalidResourceHandle, "%s is no longer the arena the handle names", path);
  } else {
    p = mmap(nullptr, chunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(w.offset));
    if (p == MAP_FAILED)
      *err = failCall(call, cudaErrorMapBufferObjectFailed, "mmap of %zu bytes of %s: %s", chunk, path,
                      std::strerror(errno));
  }
  close(fd);  // the mapping keeps the memory
  return p == MAP_FAILED ? nullptr : p;
}

cudaError_t ipcOpen(void** devPtr, const cudaIpcMemHandle_t& handle) {
  const char* call = "cudaIpcOpenMemHandle";
  IpcWire w;
  std::memcpy(&w, &handle, sizeof w);
  const size_t chunk = size_t(w.chunkPages) * pageSize();
  if (w.magic != kIpcMagic || w.check != wireCheck(w) || chunk == 0 || w.bytes == 0 || w.bytes > chunk)
    return failCall(call, cudaErrorInvalidResourceHandle, "not a memory handle of the virtual GPU");
  if (w.pid == uint32_t(getpid()))
    return failCall(call, cudaErrorDeviceUninitialized, "the handle was exported by this process (CUDA refuses that)");
  State& s = state();
  const IpcKey key = keyOf(w);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.ipcOpen.find(key);
    if (it != s.ipcOpen.end()) {  // opened before: the same mapping, one more reference
      ++s.ranges.at(it->second).ipcRefs;
      *devPtr = reinterpret_cast<void*>(it->second);
      return cudaSuccess;
    }
  }
  cudaError_t err = cudaSuccess;
  void* p = mapForeignChunk(w, chunk, &err);
  if (p == nullptr) return err;
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.ipcOpen.find(key);
  if (it != s.ipcOpen.end()) {  // another thread opened it meanwhile
    munmap(p, chunk);
    ++s.ranges.at(it->second).ipcRefs;
    *devPtr = reinterpret_cast<void*>(it->second);
    return cudaSuccess;
  }
  Entry e;
  e.range = MemRange{static_cast<const char*>(p), size_t(w.bytes), MemKind::kIpcMapped, int(w.device)};
  e.origin = Origin::kIpcOpen;
  e.mappedBytes = chunk;
  e.ipcRefs = 1;
  e.ipcOpener = currentDevice();
  e.ipcKey = key;
  try {
    s.ranges.emplace(reinterpret_cast<uintptr_t>(p), e);
    s.ipcOpen.emplace(key, reinterpret_cast<uintptr_t>(p));
  } catch (...) {
    s.ranges.erase(reinterpret_cast<uintptr_t>(p));
    munmap(p, chunk);
    throw;
  }
  *devPtr = p;
  return cudaSuccess;
}

// Drops one reference of an opened handle; `last` says whether the caller must now unmap.
enum class CloseStep { kNotOpened, kDropped, kLast };
CloseStep dropIpcRef(void* devPtr, bool onlyIfLast, Entry* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.ranges.find(reinterpret_cast<uintptr_t>(devPtr));
  if (it == s.ranges.end() || it->second.origin != Origin::kIpcOpen) return CloseStep::kNotOpened;
  *out = it->second;
  if (it->second.ipcRefs > 1) {
    if (!onlyIfLast) --it->second.ipcRefs;
    return CloseStep::kDropped;
  }
  if (onlyIfLast) return CloseStep::kLast;
  s.ipcOpen.erase(it->second.ipcKey);
  s.ranges.erase(it);
  return CloseStep::kLast;
}

}  // namespace

// ---- memory_registry.h --------------------------------------------------------------------------

bool addRange(const MemRange& r, uintptr_t joinTag, bool readOnly) {
  if (r.base == nullptr || r.bytes == 0) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (overlapsLive(s, reinterpret_cast<uintptr_t>(r.base), r.bytes, nullptr)) return false;
  Entry e;
  e.range = r;
  e.origin = Origin::kCuMem;
  e.joinTag = joinTag;
  e.readOnly = readOnly;
  s.ranges.emplace(reinterpret_cast<uintptr_t>(r.base), e);
  return true;
}

bool removeRange(const void* base) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.ranges.find(reinterpret_cast<uintptr_t>(base));
  if (it == s.ranges.end() || it->second.origin != Origin::kCuMem) return false;
  s.ranges.erase(it);
  return true;
}

bool rangeAt(const void* p, MemRange* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = p == nullptr ? s.ranges.end() : entryAt(s, p);
  if (it == s.ranges.end()) return false;
  if (out) *out = it->second.range;
  return true;
}

bool chargeDevice(int dev, size_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return chargeLocked(s, dev, bytes);
}

void unchargeDevice(int dev, size_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  unchargeLocked(s, dev, bytes);
}

size_t chargedBytes(int dev) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return size_t(dev) < s.charged.size() ? s.charged[dev] : 0;
}

// ---- vgpu.h -------------------------------------------------------------------------------------

bool findRange(const void* p, size_t bytes, MemRange* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return locate(s, p, bytes, out, nullptr);
}

namespace {

// Checks one side of a copy or set that the device touches.
cudaError_t checkDeviceSide(const char* call, const char* side, const void* p, size_t bytes, bool write) {
  State& s = state();
  bool writable = true;
  bool found;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    found = locate(s, p, bytes, nullptr, &writable);
  }
  if (!found) {
    MemRange r;
    if (rangeAt(p, &r))
      return failCall(call, cudaErrorInvalidValue,
                      "%s %p + %zu bytes runs past the end of its allocation (%p, %zu bytes)", side, p, bytes,
                      static_cast<const void*>(r.base), r.bytes);
    return failCall(call, cudaErrorInvalidValue, "%s %p + %zu bytes is not inside device-accessible memory", side, p,
                    bytes);
  }
  if (write && !writable)
    return failCall(call, cudaErrorInvalidValue, "%s %p + %zu bytes is read-only for devices", side, p, bytes);
  return cudaSuccess;
}

}  // namespace

cudaError_t validateCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* call) {
  bool dstDevice = false, srcDevice = false;
  switch (kind) {
    case cudaMemcpyHostToHost: break;
    case cudaMemcpyHostToDevice: dstDevice = true; break;
    case cudaMemcpyDeviceToHost: srcDevice = true; break;
    case cudaMemcpyDeviceToDevice: dstDevice = srcDevice = true; break;
    case cudaMemcpyDefault:  // unified addressing: whatever the registry knows is checked as device memory
      dstDevice = rangeAt(dst, nullptr);
      srcDevice = rangeAt(src, nullptr);
      break;
    default: return failCall(call, cudaErrorInvalidMemcpyDirection, "cudaMemcpyKind %d", int(kind));
  }
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr)
    return failCall(call, cudaErrorInvalidValue, "null %s pointer for %zu bytes", dst == nullptr ? "destination" : "source",
                    bytes);
  if (dstDevice)
    if (cudaError_t e = checkDeviceSide(call, "destination", dst, bytes, true)) return e;
  if (srcDevice)
    if (cudaError_t e = checkDeviceSide(call, "source", src, bytes, false)) return e;
  return cudaSuccess;
}

cudaError_t validateSet(void* dst, size_t bytes, const char* call) {
  return bytes == 0 ? cudaSuccess : checkDeviceSide(call, "destination", dst, bytes, true);
}

cudaError_t copyChecked(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* call) {
  if (cudaError_t e = validateCopy(dst, src, bytes, kind, call)) return e;
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t setChecked(void* dst, int value, size_t bytes, const char* call) {
  if (cudaError_t e = validateSet(dst, bytes, call)) return e;
  if (bytes > 0) std::memset(dst, value, bytes);
  return cudaSuccess;
}

}  // namespace accl::vgpu

using namespace accl::vgpu;

// ---- device memory ------------------------------------------------------------------------------

VGPU_API cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (cudaError_t e = checkCaptureForbidden("cudaMalloc")) return e;
  return guarded("cudaMalloc", [&] {
    if (devPtr == nullptr) return failCall("cudaMalloc", cudaErrorInvalidValue, "devPtr is null");
    if (size == 0) {
      *devPtr = nullptr;
      return cudaSuccess;
    }
    return deviceAlloc(devPtr, size);
  });
}

VGPU_API cudaError_t cudaFree(void* devPtr) {
  if (cudaError_t e = checkCaptureForbidden("cudaFree")) return e;
  if (devPtr == nullptr) return cudaSuccess;  // also how programs create their context
  return guarded("cudaFree", [&] {
    Entry e;
    if (!baseOf(devPtr, Origin::kMalloc, &e))
      return failCall("cudaFree", cudaErrorInvalidValue, "%p is not the base of a live cudaMalloc allocation", devPtr);
    syncDeviceImplicit(e.range.device);
    if (!takeEntry(devPtr, Origin::kMalloc, &e))
      return failCall("cudaFree", cudaErrorInvalidValue, "%p was freed by another thread meanwhile", devPtr);
    releaseChunk(e);
    return cudaSuccess;
  });
}

VGPU_API cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return failCall("cudaMemGetInfo", cudaErrorInvalidValue, "null output");
  int dev;
  if (cudaError_t e = currentOrdinal("cudaMemGetInfo", &dev)) return e;
  *total = device(dev)->memoryBytes;
  *free = *total - std::min(*total, chargedBytes(dev));
  return cudaSuccess;
}

VGPU_API cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return refuse("cudaMallocManaged");
}

VGPU_API cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t stream) {
  return refuse("cudaMallocAsync");
}

VGPU_API cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t stream) { return refuse("cudaFreeAsync"); }

// ---- pinned and registered host memory ----------------------------------------------------------

VGPU_API cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return guarded("cudaHostAlloc", [&] { return hostAlloc("cudaHostAlloc", pHost, size, flags); });
}

VGPU_API cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return guarded("cudaMallocHost", [&] { return hostAlloc("cudaMallocHost", ptr, size, cudaHostAllocDefault); });
}

VGPU_API cudaError_t cudaFreeHost(void* ptr) {
  if (cudaError_t e = checkCaptureForbidden("cudaFreeHost")) return e;
  if (ptr == nullptr) return cudaSuccess;
  return guarded("cudaFreeHost", [&] {
    Entry e;
    if (!baseOf(ptr, Origin::kHostAlloc, &e))
      return failCall("cudaFreeHost", cudaErrorInvalidValue, "%p is not the base of a live cudaHostAlloc allocation", ptr);
    syncAllDevices();
    if (!takeEntry(ptr, Origin::kHostAlloc, &e))
      return failCall("cudaFreeHost", cudaErrorInvalidValue, "%p was freed by another thread meanwhile", ptr);
    munmap(ptr, e.mappedBytes);
    return cudaSuccess;
  });
}

VGPU_API cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (cudaError_t e = checkCaptureForbidden("cudaHostRegister")) return e;
  return guarded("cudaHostRegister", [&] { return hostRegister(ptr, size, flags); });
}

VGPU_API cudaError_t cudaHostUnregister(void* ptr) {
  if (cudaError_t e = checkCaptureForbidden("cudaHostUnregister")) return e;
  if (ptr == nullptr) return failCall("cudaHostUnregister", cudaErrorInvalidValue, "null pointer");
  return guarded("cudaHostUnregister", [&] {
    Entry e;
    if (!baseOf(ptr, Origin::kHostRegister, &e))
      return failCall("cudaHostUnregister", cudaErrorHostMemoryNotRegistered,
                      "%p is not the base of a cudaHostRegister'd range", ptr);
    syncAllDevices();
    if (!takeEntry(ptr, Origin::kHostRegister, &e))
      return failCall("cudaHostUnregister", cudaErrorHostMemoryNotRegistered, "%p was unregistered meanwhile", ptr);
    return cudaSuccess;
  });
}

VGPU_API cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  const char* call = "cudaHostGetDevicePointer";
  if (pDevice == nullptr || flags != 0)
    return failCall(call, cudaErrorInvalidValue, "null output or flags 0x%x (must be 0)", flags);
  MemRange r;
  if (!rangeAt(pHost, &r) || (r.kind != MemKind::kHostPinned && r.kind != MemKind::kHostRegistered))
    return failCall(call, cudaErrorInvalidValue, "%p is not pinned or registered host memory", pHost);
  *pDevice = pHost;  // unified addressing: the device sees host memory at the host's address
  return cudaSuccess;
}

VGPU_API cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  const char* call = "cudaHostGetFlags";
  if (pFlags == nullptr) return failCall(call, cudaErrorInvalidValue, "null output");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = pHost == nullptr ? s.ranges.end() : entryAt(s, pHost);
  if (it == s.ranges.end() || it->second.origin != Origin::kHostAlloc)
    return failCall(call, cudaErrorInvalidValue, "%p is not inside a cudaHostAlloc allocation", pHost);
  *pFlags = it->second.flags;
  return cudaSuccess;
}

// ---- pointer attributes -------------------------------------------------------------------------

VGPU_API cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return failCall("cudaPointerGetAttributes", cudaErrorInvalidValue, "null attributes");
  std::memset(attributes, 0, sizeof *attributes);
  MemRange r;
  if (!rangeAt(ptr, &r)) {
    // Since CUDA 11: memory CUDA does not know is "unregistered", reported with success.
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  attributes->device = r.device;
  attributes->devicePointer = const_cast<void*>(ptr);
  if (r.kind == MemKind::kHostPinned || r.kind == MemKind::kHostRegistered) {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(ptr);
  } else {
    attributes->type = cudaMemoryTypeDevice;  // device memory has no host alias on a GPU
  }
  return cudaSuccess;
}

// ---- legacy IPC ---------------------------------------------------------------------------------

VGPU_API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  const char* call = "cudaIpcGetMemHandle";
  if (handle == nullptr || devPtr == nullptr) return failCall(call, cudaErrorInvalidValue, "null handle or pointer");
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = entryAt(s, devPtr);
  if (it == s.ranges.end() || it->second.origin != Origin::kMalloc)
    return failCall(call, cudaErrorInvalidValue, "%p is not inside a cudaMalloc allocation", devPtr);
  const Entry& e = it->second;
  const Arena* a = s.arenas.at(e.range.device).get();
  IpcWire w{};
  w.magic = kIpcMagic;
  w.pid = uint32_t(a->owner);
  w.fd = a->fd;
  w.device = e.range.device;
  w.offset = e.arenaOffset;
  w.bytes = e.range.bytes;
  w.generation = e.generation;
  w.st_dev = a->st_dev;
  w.st_ino = a->st_ino;
  w.chunkPages = uint32_t(e.mappedBytes / pageSize());
  w.check = wireCheck(w);
  static_assert(sizeof *handle == sizeof w);
  std::memcpy(handle, &w, sizeof w);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  const char* call = "cudaIpcOpenMemHandle";
  if (cudaError_t e = checkCaptureForbidden(call)) return e;
  if (devPtr == nullptr) return failCall(call, cudaErrorInvalidValue, "devPtr is null");
  if (flags & ~unsigned(cudaIpcMemLazyEnablePeerAccess))
    return failCall(call, cudaErrorInvalidValue, "flags 0x%x (only cudaIpcMemLazyEnablePeerAccess is valid)", flags);
  return guarded(call, [&] { return ipcOpen(devPtr, handle); });
}

VGPU_API cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  const char* call = "cudaIpcCloseMemHandle";
  if (cudaError_t e = checkCaptureForbidden(call)) return e;
  return guarded(call, [&] {
    Entry e;
    CloseStep step = dropIpcRef(devPtr, /*onlyIfLast=*/true, &e);
    if (step == CloseStep::kNotOpened)
      return failCall(call, cudaErrorInvalidValue, "%p was not returned by cudaIpcOpenMemHandle", devPtr);
    if (step == CloseStep::kLast) syncDeviceImplicit(e.ipcOpener);  // the last close unmaps: nothing may use it
    step = dropIpcRef(devPtr, /*onlyIfLast=*/false, &e);
    if (step == CloseStep::kNotOpened)
      return failCall(call, cudaErrorInvalidValue, "%p was closed by another thread meanwhile", devPtr);
    if (step == CloseStep::kLast) munmap(devPtr, e.mappedBytes);
    return cudaSuccess;
  });
}
