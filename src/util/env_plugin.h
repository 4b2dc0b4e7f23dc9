// NCCL env plugins (NCCL_ENV_PLUGIN): a shared library that exports ncclEnvPlugin_v2 or
// ncclEnvPlugin_v1 and answers "what is the value of setting X" in place of the environment and
// the config files. The settings registry (util/params.cc) asks it first when one is loaded; a
// name the plugin does not know (NULL) takes the registry default, as in NCCL.
//
// Which library (NCCL_ENV_PLUGIN, always read from the real environment):
//   unset      libnccl-env.so if the dynamic loader finds it, silently nothing otherwise;
//   "none"     no plugin;
//   a path     (contains '/') that file;
//   a name     libnccl-env-<name>.so, else the name itself as a library file name.
// A library named explicitly that cannot be loaded, exports neither symbol (v2 tried first), or
// whose init fails is a warning on stderr and no plugin. The plugin is loaded on the first
// settings read, and again when NCCL_ENV_PLUGIN changes (the old one is finalized and unloaded;
// NCCL reads it once); finalize runs at process exit.
//
// The logger handed to the plugin drops INFO lines the plugin writes from inside init or getEnv
// and prints its WARN lines to stderr: those calls happen while accl is reading its own logging
// settings, so they cannot go through the logger.
#pragma once

#include <string>

namespace accl {

// True when an env plugin is in charge of the settings; then *found says whether it knows
// `name` and *value holds its answer. False: no plugin, read the environment as usual.
bool envPluginLookup(const char* name, bool* found, std::string* value);

// The loaded plugin's name and ABI version (1 or 2), or "" and 0 when there is none.
std::string envPluginName(int* version);

}  // namespace accl
