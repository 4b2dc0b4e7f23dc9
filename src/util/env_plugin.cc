// Loading NCCL env plugins and asking them for setting values (see env_plugin.h).
#include "util/env_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "nccl.h"
#include "util/log.h"

namespace accl {
namespace {

// The ABI, in accl's names (layout per NCCL's env plugin headers: name, init, finalize, getEnv).
using PluginLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
struct EnvPluginV1 {
  const char* name;
  ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix);
  ncclResult_t (*finalize)();
  // The value, or NULL when unknown; the text stays valid until the next getEnv of the same name.
  const char* (*getEnv)(const char* name);
};
struct EnvPluginV2 {
  const char* name;
  ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix, PluginLogger logger);
  ncclResult_t (*finalize)();
  const char* (*getEnv)(const char* name);
};

struct Loaded {
  std::string spec;     // the NCCL_ENV_PLUGIN value this state was made for
  bool tried = false;
  void* handle = nullptr;
  int version = 0;
  std::string name;
  ncclResult_t (*finalize)() = nullptr;
  const char* (*getEnv)(const char*) = nullptr;
};

std::mutex gMutex;
Loaded gLoaded;
thread_local bool tInsidePlugin = false;  // this thread is in init/getEnv of the plugin

void pluginLogger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (tInsidePlugin) {
    if (level == kLogWarn) std::fprintf(stderr, "accl: env plugin: %s\n", buf);
    return;
  }
  if (level > kLogNone && level <= logLevel())
    logMessage(static_cast<LogLevel>(level), flags, file ? file : "env-plugin", line, "%s", buf);
}

void unloadLocked() {
  if (gLoaded.finalize) {
    tInsidePlugin = true;
    gLoaded.finalize();
    tInsidePlugin = false;
  }
  if (gLoaded.handle) dlclose(gLoaded.handle);
  gLoaded = Loaded();
}

void finalizeAtExit() {
  std::lock_guard<std::mutex> lock(gMutex);
  unloadLocked();
  gLoaded.tried = true;  // no reload after exit started
  gLoaded.spec = "\x01exited";
}

void loadLocked(const std::string& spec) {
  unloadLocked();
  gLoaded.spec = spec;
  gLoaded.tried = true;
  if (strcasecmp(spec.c_str(), "none") == 0) return;
  bool explicitChoice = !spec.empty();
  std::string files[2];
  if (spec.empty()) files[0] = "libnccl-env.so";
  else if (spec.find('/') != std::string::npos) files[0] = spec;
  else files[0] = "libnccl-env-" + spec + ".so", files[1] = spec;
  void* handle = nullptr;
  std::string file;
  for (const std::string& f : files) {
    if (f.empty() || handle) continue;
    handle = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) file = f;
  }
  if (!handle) {
    if (explicitChoice)
      std::fprintf(stderr, "accl: cannot load NCCL_ENV_PLUGIN=%s (%s); settings come from the environment\n",
                   spec.c_str(), dlerror());
    return;
  }
  const char* name = nullptr;
  ncclResult_t res = ncclInternalError;
  tInsidePlugin = true;
  if (auto* v2 = static_cast<const EnvPluginV2*>(dlsym(handle, "ncclEnvPlugin_v2"))) {
    if (v2->init && v2->getEnv) {
      gLoaded.version = 2;
      name = v2->name;
      gLoaded.finalize = v2->finalize;
      gLoaded.getEnv = v2->getEnv;
      res = v2->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX, pluginLogger);
    }
  } else if (auto* v1 = static_cast<const EnvPluginV1*>(dlsym(handle, "ncclEnvPlugin_v1"))) {
    if (v1->init && v1->getEnv) {
      gLoaded.version = 1;
      name = v1->name;
      gLoaded.finalize = v1->finalize;
      gLoaded.getEnv = v1->getEnv;
      res = v1->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX);
    }
  }
  tInsidePlugin = false;
  if (gLoaded.version == 0 || res != ncclSuccess) {
    if (explicitChoice)
      std::fprintf(stderr, "accl: NCCL_ENV_PLUGIN=%s: %s; settings come from the environment\n", spec.c_str(),
                   gLoaded.version == 0 ? "no usable ncclEnvPlugin_v2 or ncclEnvPlugin_v1" : "init failed");
    gLoaded.finalize = nullptr;  // init failed or never ran: nothing to finalize
    dlclose(handle);
    gLoaded = Loaded();
    gLoaded.spec = spec;
    gLoaded.tried = true;
    return;
  }
  gLoaded.handle = handle;
  gLoaded.name = name ? name : file;
  static std::once_flag atExit;
  std::call_once(atExit, [] { std::atexit(finalizeAtExit); });
}

// Loads (or reloads) the plugin NCCL_ENV_PLUGIN names, unless that was already done.
void ensureLoadedLocked() {
  const char* raw = std::getenv("NCCL_ENV_PLUGIN");
  std::string spec = raw ? raw : "";
  if (!gLoaded.tried || (gLoaded.spec != spec && gLoaded.spec != "\x01exited")) loadLocked(spec);
}

}  // namespace

bool envPluginLookup(const char* name, bool* found, std::string* value) {
  // The plugin's own init or getEnv reading settings through accl sees the environment; the
  // plugin never decides NCCL_ENV_PLUGIN itself.
  if (tInsidePlugin || std::strcmp(name, "NCCL_ENV_PLUGIN") == 0) return false;
  std::lock_guard<std::mutex> lock(gMutex);
  ensureLoadedLocked();
  if (!gLoaded.getEnv) return false;
  tInsidePlugin = true;
  const char* v = gLoaded.getEnv(name);
  tInsidePlugin = false;
  *found = v != nullptr;
  if (v) *value = v;
  return true;
}

std::string envPluginName(int* version) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!tInsidePlugin) ensureLoadedLocked();
  if (version) *version = gLoaded.version;
  return gLoaded.name;
}

}  // namespace accl
