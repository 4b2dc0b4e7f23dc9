// NCCL-format logging: parses NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE once per process
// (until resetLogSettings) and writes lines as "<host>:<pid>:<tid> [<dev>] NCCL INFO <msg>".
#include "util/log.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "nccl.h"
#include "util/last_error.h"
#include "util/log_device.h"
#include "util/params.h"

namespace accl {
namespace {

struct LogSettings {
  bool parsed = false;
  LogLevel level = kLogNone;
  uint64_t subsysMask = ACCL_LOG_INIT | ACCL_LOG_BOOTSTRAP | ACCL_LOG_ENV;
  FILE* out = stdout;
  char host[64] = "";
};

std::mutex gLogMutex;
LogSettings gSettings;
thread_local int tLogDevice = 0;

LogLevel parseLevel(const std::string& s) {
  if (strcasecmp(s.c_str(), "VERSION") == 0) return kLogVersion;
  if (strcasecmp(s.c_str(), "WARN") == 0) return kLogWarn;
  if (strcasecmp(s.c_str(), "INFO") == 0) return kLogInfo;
  if (strcasecmp(s.c_str(), "ABORT") == 0) return kLogAbort;
  if (strcasecmp(s.c_str(), "TRACE") == 0) return kLogTrace;
  return kLogNone;
}

uint64_t subsysBit(const char* name) {
  static const struct {
    const char* name;
    uint64_t bit;
  } kNames[] = {{"INIT", ACCL_LOG_INIT},       {"COLL", ACCL_LOG_COLL},   {"P2P", ACCL_LOG_P2P},
                {"SHM", ACCL_LOG_SHM},         {"NET", ACCL_LOG_NET},     {"GRAPH", ACCL_LOG_GRAPH},
                {"TUNING", ACCL_LOG_TUNING},   {"ENV", ACCL_LOG_ENV},     {"ALLOC", ACCL_LOG_ALLOC},
                {"CALL", ACCL_LOG_CALL},       {"PROXY", ACCL_LOG_PROXY}, {"NVLS", ACCL_LOG_NVLS},
                {"BOOTSTRAP", ACCL_LOG_BOOTSTRAP}, {"REG", ACCL_LOG_REG}, {"PROFILE", ACCL_LOG_PROFILE},
                {"RAS", ACCL_LOG_RAS},         {"ALL", ACCL_LOG_ALL}};
  for (const auto& n : kNames)
    if (strcasecmp(n.name, name) == 0) return n.bit;
  return 0;
}

// "INIT,NET" enables those; a leading '^' inverts the list.
uint64_t parseSubsys(const std::string& spec) {
  bool invert = !spec.empty() && spec[0] == '^';
  std::string list = invert ? spec.substr(1) : spec;
  uint64_t mask = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string token = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    mask |= subsysBit(token.c_str());
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return invert ? ~mask : mask;
}

// Expands %h (hostname) and %p (pid) in NCCL_DEBUG_FILE.
std::string expandDebugFileName(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'h') { out += host; ++i; continue; }
      if (c == 'p') { out += std::to_string(getpid()); ++i; continue; }
      if (c == '%') { out += '%'; ++i; continue; }
    }
    out += pattern[i];
  }
  return out;
}

void parseSettingsLocked() {
  if (gSettings.parsed) return;
  gethostname(gSettings.host, sizeof(gSettings.host) - 1);
  if (char* dot = strchr(gSettings.host, '.')) *dot = '\0';
  gSettings.level = parseLevel(paramStr("NCCL_DEBUG"));
  std::string subsys = paramStr("NCCL_DEBUG_SUBSYS");
  if (!subsys.empty()) gSettings.subsysMask = parseSubsys(subsys);
  std::string file = paramStr("NCCL_DEBUG_FILE");
  if (!file.empty() && gSettings.level > kLogVersion) {
    std::string name = expandDebugFileName(file, gSettings.host);
    if (FILE* f = fopen(name.c_str(), "w")) {
      setvbuf(f, nullptr, _IOLBF, 1024);
      gSettings.out = f;
    }
  }
  gSettings.parsed = true;
}

}  // namespace

LogLevel logLevel() {
  // Fast path without the lock once parsed; the flag only ever goes false->true between resets.
  if (__atomic_load_n(&gSettings.parsed, __ATOMIC_ACQUIRE)) return gSettings.level;
  std::lock_guard<std::mutex> lock(gLogMutex);
  parseSettingsLocked();
  return gSettings.level;
}

void resetLogSettings() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  if (gSettings.out != stdout && gSettings.out != nullptr) fclose(gSettings.out);
  gSettings = LogSettings();
}

void setLogDevice(int device) { tLogDevice = device; }

void pluginLogMessage(const char* origin, int level, unsigned long flags, const char* file, int line,
                      const char* fmt, va_list ap) {
  if (level <= kLogNone || level > logLevel()) return;
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  logMessage(static_cast<LogLevel>(level), flags, file ? file : origin, line, "%s", buf);
}

void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (level == kLogWarn) setLastError(msg);

  std::lock_guard<std::mutex> lock(gLogMutex);
  parseSettingsLocked();
  if (gSettings.level < level) return;
  if (level != kLogWarn && !(gSettings.subsysMask & subsys)) return;
  long tid = syscall(SYS_gettid);
  const char* base = strrchr(file, '/');
  base = base ? base + 1 : file;
  if (level == kLogWarn) {
    char stamp[32];
    time_t now = time(nullptr);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(stamp, sizeof(stamp), "[%F %T] ", &tmv);
    fprintf(gSettings.out, "\n%s%s:%d:%ld [%d] %s:%d NCCL WARN %s\n", stamp, gSettings.host, getpid(), tid,
            tLogDevice, base, line, msg);
  } else if (level == kLogTrace) {
    fprintf(gSettings.out, "%s:%d:%ld [%d] %s:%d NCCL TRACE %s\n", gSettings.host, getpid(), tid, tLogDevice,
            base, line, msg);
  } else {
    fprintf(gSettings.out, "%s:%d:%ld [%d] NCCL INFO %s\n", gSettings.host, getpid(), tid, tLogDevice, msg);
  }
  fflush(gSettings.out);
}

void logVersionBannerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (logLevel() >= kLogVersion) {
      std::lock_guard<std::mutex> lock(gLogMutex);
      fprintf(gSettings.out, "NCCL version %d.%d.%d+accl\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
      fflush(gSettings.out);
    }
  });
}

}  // namespace accl
