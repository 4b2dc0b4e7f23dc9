// Finding, opening, sharing and initializing net plugin libraries (see plugin_library.h).
#include "transports/net/plugin/plugin_library.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl::netplugin {
namespace {

constexpr const char* kDefaultLibrary = "libnccl-net.so";
constexpr const char* kLinkedInPlugin = "STATIC_PLUGIN";

// Every library loaded in this process, by dlopen handle: two entries that name the same file
// share one PluginLibrary (and one pre-v11 init).
struct LoadedLibrary {
  void* handle;
  std::weak_ptr<PluginLibrary> library;
};
std::mutex gLoadedMutex;
std::vector<LoadedLibrary> gLoaded;

bool endsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The file names to dlopen for one entry, in order.
std::vector<std::string> filesFor(const std::string& entry) {
  if (entry.empty()) return {kDefaultLibrary};
  std::vector<std::string> files{entry};
  if (strcasecmp(entry.c_str(), kLinkedInPlugin) == 0) return files;
  bool isPath = entry.find('/') != std::string::npos;
  bool isLibraryName = entry.rfind("lib", 0) == 0 && endsWith(entry, ".so");
  if (!isPath && !isLibraryName) files.push_back("libnccl-net-" + entry + ".so");
  return files;
}

// A WARN when the user asked for this library, else INFO (a missing default is normal).
#define PLUGIN_LOG(named, ...)                              \
  do {                                                      \
    if (named)                                              \
      ACCL_WARN(__VA_ARGS__);                               \
    else                                                    \
      ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, __VA_ARGS__); \
  } while (0)

}  // namespace

void pluginLog(int level, unsigned long subsys, const char* file, int line, const char* fmt, ...) {
  // A plugin's WARN is also the process's last error (ncclGetLastError), whatever NCCL_DEBUG says.
  if (level <= kLogNone || (level > logLevel() && level != kLogWarn)) return;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  logMessage(static_cast<LogLevel>(level), subsys, file ? file : "net-plugin", line, "%s", text);
}

std::vector<std::string> pluginEntriesFor(const std::string& value, bool isSet) {
  if (!isSet) return {""};
  std::vector<std::string> entries;
  if (strcasecmp(value.c_str(), "none") == 0) return entries;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string entry = value.substr(start, comma - start);
    // Surrounding blanks are a typing accident, not part of a file name.
    size_t first = entry.find_first_not_of(" \t"), last = entry.find_last_not_of(" \t");
    if (first != std::string::npos) entries.push_back(entry.substr(first, last - first + 1));
    start = comma + 1;
  }
  return entries;
}

std::vector<std::string> pluginEntries() {
  bool isSet = std::strcmp(paramSource("NCCL_NET_PLUGIN"), "default") != 0;
  std::string value = paramStr("NCCL_NET_PLUGIN");
  if (isSet) ACCL_INFO(ACCL_LOG_ENV | ACCL_LOG_NET, "NCCL_NET_PLUGIN set to '%s'", value.c_str());
  return pluginEntriesFor(value, isSet);
}

std::shared_ptr<PluginLibrary> PluginLibrary::load(const std::string& entry) {
  const bool named = !entry.empty();
  const char* what = named ? entry.c_str() : kDefaultLibrary;
  // One load at a time, dlopen included: a plugin's static initializers (which may fill its
  // ncclNetPlugin_vN table) run inside the first dlopen, and a second thread must read the table
  // only after them. glibc's loader lock orders that, but it is invisible to ThreadSanitizer.
  std::lock_guard<std::mutex> lock(gLoadedMutex);
  void* handle = nullptr;
  std::string file, notFound, otherErrors;
  for (const std::string& candidate : filesFor(entry)) {
    dlerror();
    // STATIC_PLUGIN (NCCL's name for a plugin linked into the program): the program's own symbols.
    const bool linkedIn = strcasecmp(candidate.c_str(), kLinkedInPlugin) == 0;
    handle = dlopen(linkedIn ? nullptr : candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      file = candidate;
      break;
    }
    const char* err = dlerror();
    std::string text = err ? err : "unknown dlopen error";
    if (text.find("No such file") != std::string::npos)
      notFound += (notFound.empty() ? "" : ", ") + candidate;
    else
      otherErrors += (otherErrors.empty() ? "" : "; ") + text;
  }
  if (!handle) {
    if (!otherErrors.empty())
      PLUGIN_LOG(named, "NET/Plugin: cannot load net plugin '%s': %s; trying the next network", what,
                 otherErrors.c_str());
    else
      PLUGIN_LOG(named, "NET/Plugin: net plugin '%s' not found (tried %s); trying the next network", what,
                 notFound.c_str());
    return nullptr;
  }

  std::erase_if(gLoaded, [](const LoadedLibrary& l) { return l.library.expired(); });
  for (const LoadedLibrary& l : gLoaded) {
    if (l.handle != handle) continue;
    if (auto shared = l.library.lock()) {
      dlclose(handle);  // the extra reference this load took
      return shared;
    }
  }

  int version = 0;
  const void* table = nullptr;
  for (int v = kNewestVersion; v >= kOldestVersion && !table; --v) {
    table = dlsym(handle, symbolFor(v));
    if (table) version = v;
  }
  if (!table) {
    PLUGIN_LOG(named,
               "NET/Plugin: %s exports none of ncclNetPlugin_v%d..v%d: unsupported net plugin; trying the next "
               "network",
               file.c_str(), kNewestVersion, kOldestVersion);
    dlclose(handle);
    return nullptr;
  }
  const char* missing = nullptr;
  std::unique_ptr<PluginCalls> calls = makePluginCalls(version, table, &missing);
  if (!calls) {
    PLUGIN_LOG(named, "NET/Plugin: %s: ncclNetPlugin_v%d has no %s: unusable net plugin; trying the next network",
               file.c_str(), version, missing);
    dlclose(handle);
    return nullptr;
  }

  std::shared_ptr<PluginLibrary> library(new PluginLibrary());
  library->handle_ = handle;
  library->file_ = file;
  library->name_ = calls->name();
  library->namedByUser_ = named;
  library->calls_ = std::move(calls);
  gLoaded.push_back({handle, library});
  ACCL_INFO(ACCL_LOG_INIT | ACCL_LOG_NET, "NET/Plugin: loaded net plugin %s from %s (ncclNetPlugin_v%d)",
            library->name_.c_str(), file.c_str(), version);
  return library;
}

PluginLibrary::~PluginLibrary() {
  calls_.reset();
  if (handle_) {
    ACCL_INFO(ACCL_LOG_NET, "NET/Plugin: unloading net plugin %s (%s)", name_.c_str(), file_.c_str());
    dlclose(handle_);
  }
}

ncclResult_t PluginLibrary::attach(uint64_t commId, int trafficClass, void** ctx, int* deviceCount) {
  *ctx = nullptr;
  *deviceCount = 0;
  ncclResult_t res = ncclSuccess;
  if (calls_->initPerComm()) {
    res = calls_->init(ctx, commId, trafficClass, pluginLog);
  } else {
    std::lock_guard<std::mutex> lock(initMutex_);
    if (!initialized_) {
      res = calls_->init(ctx, commId, trafficClass, pluginLog);
      initialized_ = res == ncclSuccess;
    }
  }
  if (res != ncclSuccess) return res;
  int count = 0;
  res = calls_->devices(&count);
  if (res != ncclSuccess) {
    detach(*ctx);
    *ctx = nullptr;
    return res;
  }
  *deviceCount = count;
  return ncclSuccess;
}

void PluginLibrary::detach(void* ctx) {
  if (!calls_->initPerComm()) return;
  ncclResult_t res = calls_->finalize(ctx);
  if (res != ncclSuccess)
    ACCL_INFO(ACCL_LOG_NET, "NET/Plugin: %s finalize returned %d", name_.c_str(), static_cast<int>(res));
}

}  // namespace accl::netplugin
