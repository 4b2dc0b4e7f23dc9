// ProfilerPlugin: finding and loading NCCL profiler plugins, one library per process
// (see profiler_plugin.h); the per-version calls are in profiler_adapters.cc.
#include "profiler/profiler_plugin.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <set>

#include "util/log.h"
#include "util/plugin_library.h"

namespace accl::prof {
namespace {

// The process's loaded plugins by setting (weak: the last communicator's release unloads), and
// the settings that failed (not tried again).
std::mutex gMutex;
std::map<std::string, std::weak_ptr<const ProfilerPlugin>> gLoaded;
std::set<std::string> gFailed;

constexpr char kProfilerOrigin[] = "profiler-plugin";  // names the plugin in its log lines without a file

}  // namespace

LogFn logFn() { return pluginLogger<kProfilerOrigin>; }

std::shared_ptr<const ProfilerPlugin> ProfilerPlugin::acquire(const std::string& spec) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (auto it = gLoaded.find(spec); it != gLoaded.end())
    if (std::shared_ptr<const ProfilerPlugin> p = it->second.lock()) return p;
  if (gFailed.count(spec)) return nullptr;
  gFailed.insert(spec);  // until proven otherwise below
  PluginLibrary lib = openPluginLibrary("profiler", spec);
  if (lib.disabled) {
    ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_PROFILE, "profiler plugin: disabled (NCCL_PROFILER_PLUGIN=%s)", spec.c_str());
    return nullptr;
  }
  void* handle = lib.handle;
  const std::string& file = lib.file;
  if (!handle) {
    if (lib.explicitChoice)
      ACCL_WARN("profiler plugin: cannot load NCCL_PROFILER_PLUGIN=%s (%s); profiling is off", spec.c_str(),
                lib.error.c_str());
    else
      ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_PROFILE, "profiler plugin: none (%s not found)", file.c_str());
    return nullptr;
  }
  std::shared_ptr<ProfilerPlugin> p(new ProfilerPlugin());
  p->handle_ = handle;
  p->path_ = file;
  int version = kNewestProfilerVersion;
  for (const char* symbol : kProfilerSymbols) {
    if (const void* sym = dlsym(handle, symbol)) {
      p->table_ = sym;
      p->version_ = version;
      break;
    }
    --version;
  }
  if (!p->table_) {
    ACCL_WARN("profiler plugin: %s exports none of ncclProfiler_v7 ... ncclProfiler_v1; profiling is off",
              file.c_str());
    return nullptr;  // the destructor unloads it
  }
  // Every version starts with name, init, startEvent, stopEvent, recordEventState, finalize.
  struct Members {
    const char* name;
    const void* fn[5];
  };
  const auto* m = static_cast<const Members*>(p->table_);
  for (const void* fn : m->fn)
    if (!fn) {
      ACCL_WARN("profiler plugin: %s (ncclProfiler_v%d) has a NULL function; profiling is off", file.c_str(),
                p->version_);
      return nullptr;
    }
  p->name_ = m->name ? m->name : file;
  gFailed.erase(spec);
  gLoaded[spec] = p;
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_PROFILE, "profiler plugin: loaded %s (v%d) from %s", p->name_.c_str(),
            p->version_, file.c_str());
  return p;
}

ProfilerPlugin::~ProfilerPlugin() {
  if (handle_) dlclose(handle_);
}

}  // namespace accl::prof
