// The settings registry: built from util/param_list.h, resolved against the environment and the
// NCCL config files.
#include "util/params.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace accl {
namespace {

const ParamInfo* findParam(const char* name) {
  for (const ParamInfo& p : allParams())
    if (std::strcmp(p.name, name) == 0) return &p;
  // Not through the logger: the logger itself reads parameters.
  std::fprintf(stderr, "accl: internal error: environment variable %s is not declared in param_list.h\n", name);
  return nullptr;
}

void readConfFile(const char* path, std::map<std::string, std::string>* out) {
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
const std::map<std::string, std::string>& confValues() {
  static std::map<std::string, std::string> values;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* conf = std::getenv("NCCL_CONF_FILE");
    if (conf && *conf) {
      readConfFile(conf, &values);
    } else if (const char* home = std::getenv("HOME")) {
      readConfFile((std::string(home) + "/.nccl.conf").c_str(), &values);
    }
    readConfFile("/etc/nccl.conf", &values);
  });
  return values;
}

// The raw string and where it came from.
const char* rawValue(const ParamInfo& p, const char** source) {
  if (const char* env = std::getenv(p.name)) {
    *source = "env";
    return env;
  }
  const auto& conf = confValues();
  auto it = conf.find(p.name);
  if (it != conf.end()) {
    *source = "conf";
    return it->second.c_str();
  }
  *source = "default";
  return p.defaultValue;
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

int64_t paramInt(const char* name) {
  const ParamInfo* p = findParam(name);
  if (!p) return 0;
  const char* source;
  const char* raw = rawValue(*p, &source);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(raw, &end, 0);
  if (end == raw || *end != '\0' || errno != 0) {
    static std::once_flag warned;  // one complaint per process is enough to notice
    std::call_once(warned, [&] {
      std::fprintf(stderr, "accl: invalid value '%s' for %s, using default %s\n", raw, name, p->defaultValue);
    });
    return std::strtoll(p->defaultValue, nullptr, 0);
  }
  return v;
}

std::string paramStr(const char* name) {
  const ParamInfo* p = findParam(name);
  if (!p) return std::string();
  const char* source;
  return rawValue(*p, &source);
}

const char* paramSource(const char* name) {
  const ParamInfo* p = findParam(name);
  if (!p) return "undeclared";
  const char* source;
  rawValue(*p, &source);
  return source;
}

}  // namespace accl
