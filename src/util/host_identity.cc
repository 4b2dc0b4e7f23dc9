// Host hash, process place and random tokens (see host_identity.h).
#include "util/host_identity.h"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "util/params.h"

namespace accl {
namespace {

std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t hostHash() {
  std::string id = paramStr("NCCL_HOSTID");
  if (id.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    id = std::string(host) + bootId();
  }
  return fnv1a64(id.data(), id.size());
}

ProcessPlace processPlace() {
  ProcessPlace place;
  std::memset(&place, 0, sizeof(place));
  std::string boot = bootId();
  if (boot.empty()) {
    // No boot id (a restricted /proc): nothing proves two processes share a kernel, so make this
    // process's value unique; such processes then share memory with no other process.
    uint64_t r = randomU64();
    boot.assign(reinterpret_cast<const char*>(&r), sizeof(r));
  }
  place.bootHash = fnv1a64(boot.data(), boot.size());
  struct stat st;
  if (stat("/proc/self/ns/pid", &st) == 0) {
    place.pidNsInode = st.st_ino;
    place.pidNsDev = st.st_dev;
  }
  place.pid = static_cast<int32_t>(getpid());
  gethostname(place.hostname, sizeof(place.hostname) - 1);
  return place;
}

bool canShareMemory(const ProcessPlace& a, const ProcessPlace& b, std::string* why) {
  char text[256];
  if (a.bootHash != b.bootHash) {
    std::snprintf(text, sizeof(text), "they run on different machines (kernel boot ids differ)");
  } else if (a.pidNsInode == 0 || b.pidNsInode == 0) {
    std::snprintf(text, sizeof(text), "the PID namespace of one of them is unknown (/proc/self/ns/pid unreadable)");
  } else if (a.pidNsInode != b.pidNsInode || a.pidNsDev != b.pidNsDev) {
    std::snprintf(text, sizeof(text), "they run in different PID namespaces (%llu vs %llu) of one machine",
                  (unsigned long long)a.pidNsInode, (unsigned long long)b.pidNsInode);
  } else {
    return true;
  }
  if (why) *why = text;
  return false;
}

uint64_t randomU64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
    // getrandom unavailable: still distinct per call and per process.
    static std::atomic<uint64_t> counter{0};
    uint64_t seed[3] = {(uint64_t)std::chrono::steady_clock::now().time_since_epoch().count(), (uint64_t)getpid(),
                        counter.fetch_add(1)};
    v = fnv1a64(seed, sizeof(seed));
  }
  return v == 0 ? 1 : v;
}

}  // namespace accl
