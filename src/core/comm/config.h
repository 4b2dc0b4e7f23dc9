// ncclConfig_t handling: reading a user's config by its size/magic/version, filling defaults,
// applying the NCCL_* environment overrides, and validating every field like NCCL does.
#pragma once

#include <string>

#include "nccl.h"

namespace accl {

// A resolved configuration. `base` has every field defined (no NCCL_CONFIG_UNDEF_*);
// netName/commName point into the owned strings below, never into user memory.
struct CommConfig {
  ncclConfig_t base;
  std::string netName;
  std::string commName;

  CommConfig() = default;
  CommConfig(const CommConfig& o) : base(o.base), netName(o.netName), commName(o.commName) { pointIntoSelf(); }
  CommConfig& operator=(const CommConfig& o) {
    base = o.base;
    netName = o.netName;
    commName = o.commName;
    pointIntoSelf();
    return *this;
  }
  // Re-aims base.netName/commName at this object's strings (after a copy).
  void pointIntoSelf() {
    base.netName = netName.empty() ? nullptr : netName.c_str();
    base.commName = commName.empty() ? nullptr : commName.c_str();
  }
};

// Resolves `user` (may be null: all defaults) for the API call named `call`. When `inherit` is
// given (split/shrink), undefined fields take the parent's values instead of the defaults.
ncclResult_t resolveConfig(const char* call, const ncclConfig_t* user, const CommConfig* inherit,
                           CommConfig* out);

}  // namespace accl
