// Finding and opening the library an NCCL_<KIND>_PLUGIN setting names, by NCCL's rule, for the
// plugin loaders (tuner, profiler):
//   unset        libnccl-<kind>.so if the dynamic loader finds it (not finding it is no error);
//   "none"       no plugin (any case);
//   a path       (contains '/') that file;
//   a name       libnccl-<kind>-<name>.so, else the name itself as a library file name.
#pragma once

#include <string>

namespace accl {

struct PluginLibrary {
  void* handle = nullptr;       // dlopen handle (RTLD_NOW | RTLD_LOCAL); null when none was opened
  std::string file;             // the file opened, or the first one tried
  std::string error;            // why nothing was opened (the loader's first message)
  bool disabled = false;        // the setting is "none"
  bool explicitChoice = false;  // the user named a library: failing to open it deserves a warning
};

PluginLibrary openPluginLibrary(const char* kind, const std::string& spec);

}  // namespace accl
