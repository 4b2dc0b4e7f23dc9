// The settings registry: built from util/param_list.h, resolved against the environment and the
// NCCL config files (or an env plugin, util/env_plugin.h, when one is loaded).
#include "util/params.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "util/env_plugin.h"

namespace accl {
namespace {

using ConfMap = std::map<std::string, std::string>;

const ParamInfo* findParam(const char* name) {
  if (const ParamInfo* p = findParamInfo(name)) return p;
  // Not through the logger: the logger itself reads parameters.
  std::fprintf(stderr, "accl: internal error: environment variable %s is not declared in param_list.h\n", name);
  return nullptr;
}

void readConfFile(const char* path, ConfMap* out) {
  FILE* f = path ? std::fopen(path, "r") : nullptr;
  if (!f) return;
  char line[1024];
  while (std::fgets(line, sizeof(line), f)) {
    char* hash = std::strchr(line, '#');
    if (hash) *hash = '\0';
    char* eq = std::strchr(line, '=');
    if (!eq) continue;
    *eq = '\0';
    std::string key = line, value = eq + 1;
    auto trim = [](std::string& s) {
      size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
      s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    };
    trim(key);
    trim(value);
    if (!key.empty() && !out->count(key)) (*out)[key] = value;  // earlier files win
  }
  std::fclose(f);
}

// Values from the config files; the user's file is read before /etc so it takes precedence.
// Read again only when NCCL_CONF_FILE or HOME changes (tests point NCCL_CONF_FILE elsewhere).
std::shared_ptr<const ConfMap> confValues() {
  static std::mutex mutex;
  static std::string loadedFor;
  static std::shared_ptr<const ConfMap> values;
  const char* conf = std::getenv("NCCL_CONF_FILE");
  const char* home = std::getenv("HOME");
  std::string key = std::string(conf ? conf : "") + '\n' + (home ? home : "");
  std::lock_guard<std::mutex> lock(mutex);
  if (values && key == loadedFor) return values;
  auto fresh = std::make_shared<ConfMap>();
  if (conf && *conf) {
    readConfFile(conf, fresh.get());
  } else if (home) {
    readConfFile((std::string(home) + "/.nccl.conf").c_str(), fresh.get());
  }
  readConfFile("/etc/nccl.conf", fresh.get());
  values = std::move(fresh);
  loadedFor = key;
  return values;
}

}  // namespace

const std::vector<ParamInfo>& allParams() {
  static const std::vector<ParamInfo> params = {
#define ACCL_PARAM(name, kind, def, help) {#name, ParamKind::kind, def, help},
#include "util/param_list.h"
#undef ACCL_PARAM
  };
  return params;
}

const ParamInfo* findParamInfo(const char* name) {
  if (name == nullptr) return nullptr;
  for (const ParamInfo& p : allParams())
    if (std::strcmp(p.name, name) == 0) return &p;
  return nullptr;
}

ParamValue paramValue(const ParamInfo& p) {
  std::string fromPlugin;
  bool found = false;
  if (envPluginLookup(p.name, &found, &fromPlugin)) {
    if (found) return {std::move(fromPlugin), "plugin"};
    return {p.defaultValue, "default"};
  }
  if (const char* env = std::getenv(p.name)) return {env, "env"};
  std::shared_ptr<const ConfMap> conf = confValues();
  auto it = conf->find(p.name);
  if (it != conf->end()) return {it->second, "conf"};
  return {p.defaultValue, "default"};
}

bool parseParamInt(const char* text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 0);
  if (end == text || *end != '\0' || errno != 0) return false;
  *out = v;
  return true;
}

int64_t paramInt(const char* name) {
  const ParamInfo* p = findParam(name);
  if (!p) return 0;
  ParamValue value = paramValue(*p);
  int64_t v = 0;
  if (!parseParamInt(value.text.c_str(), &v)) {
    static std::once_flag warned;  // one complaint per process is enough to notice
    std::call_once(warned, [&] {
      std::fprintf(stderr, "accl: invalid value '%s' for %s, using default %s\n", value.text.c_str(), name,
                   p->defaultValue);
    });
    return std::strtoll(p->defaultValue, nullptr, 0);
  }
  return v;
}

std::string paramStr(const char* name) {
  const ParamInfo* p = findParam(name);
  if (!p) return std::string();
  return paramValue(*p).text;
}

const char* paramSource(const char* name) {
  const ParamInfo* p = findParam(name);
  if (!p) return "undeclared";
  return paramValue(*p).source;
}

}  // namespace accl
