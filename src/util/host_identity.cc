// Host hash (see host_identity.h).
#include "util/host_identity.h"

#include <unistd.h>

#include <fstream>

#include "util/params.h"

namespace accl {

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
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string bootId;
    std::getline(in, bootId);
    id = std::string(host) + bootId;
  }
  return fnv1a64(id.data(), id.size());
}

}  // namespace accl
