// openPluginLibrary: NCCL's search order for a plugin setting (see plugin_library.h).
#include "util/plugin_library.h"

#include <dlfcn.h>
#include <strings.h>

#include <vector>

namespace accl {

PluginLibrary openPluginLibrary(const char* kind, const std::string& spec) {
  PluginLibrary lib;
  std::vector<std::string> files;
  if (spec.empty()) {
    files = {std::string("libnccl-") + kind + ".so"};
  } else if (strcasecmp(spec.c_str(), "none") == 0) {
    lib.disabled = true;
    return lib;
  } else if (spec.find('/') != std::string::npos) {
    files = {spec};
  } else {
    files = {std::string("libnccl-") + kind + "-" + spec + ".so", spec};
  }
  lib.explicitChoice = !spec.empty();
  lib.file = files.front();
  for (const std::string& f : files) {
    lib.handle = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle) {
      lib.file = f;
      lib.error.clear();
      return lib;
    }
    const char* err = dlerror();
    if (lib.error.empty()) lib.error = err ? err : f;
  }
  return lib;
}

}  // namespace accl
