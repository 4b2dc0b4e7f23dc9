// Fault injection of the verbs emulator: parses ACCL_VERBS_EMU_FAULT / ACCL_VERBS_EMU_FAULT_FILE
// / accl_verbs_emu_set_fault specs and answers the data path's questions (error this send? drop
// or delay this completion?). Process-wide, one mutex.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "verbs_emu.h"
#include "verbs_emu_control.h"

namespace verbs_emu {
namespace {

struct Faults {
  long qpErrorAfter = -1;   // sends still allowed before the fault; -1 off
  long rkeyMismatch = -1;   // data writes still allowed before the fault
  long dropCq = -1;         // completions still allowed before the drop
  int delayCqMs = 0;
};

std::mutex gMu;
Faults gFaults;
bool gInit = false;
std::string gFile;  // the ACCL_VERBS_EMU_FAULT_FILE last read
struct timespec gFileMtime {};
off_t gFileSize = -1;
int64_t gLastFileCheckNs = 0;

bool parse(const char* spec, Faults* out) {
  Faults f;
  std::string s = spec ? spec : "";
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    pos = comma + 1;
    while (!item.empty() && (item.back() == '\n' || item.back() == ' ' || item.back() == '\r')) item.pop_back();
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string::npos) return false;
    std::string key = item.substr(0, colon);
    char* end = nullptr;
    long v = strtol(item.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || v < 0) return false;
    if (key == "qp_error_after") f.qpErrorAfter = v;
    else if (key == "rkey_mismatch") f.rkeyMismatch = v;
    else if (key == "drop_cq") f.dropCq = v;
    else if (key == "delay_cq") f.delayCqMs = static_cast<int>(v);
    else return false;
  }
  *out = f;
  return true;
}

void initLocked() {
  if (gInit) return;
  gInit = true;
  const char* env = getenv("ACCL_VERBS_EMU_FAULT");
  if (env && !parse(env, &gFaults)) fprintf(stderr, "verbs-emu: ACCL_VERBS_EMU_FAULT=\"%s\" does not parse; ignored\n", env);
}

}  // namespace

FaultDecision faultOnPostSend(bool isRdmaWriteWithData) {
  std::lock_guard<std::mutex> lock(gMu);
  initLocked();
  FaultDecision d;
  if (gFaults.qpErrorAfter >= 0) {
    if (gFaults.qpErrorAfter == 0) d.qpError = true;
    gFaults.qpErrorAfter--;  // -1 after firing: off
  }
  if (isRdmaWriteWithData && gFaults.rkeyMismatch >= 0) {
    if (gFaults.rkeyMismatch == 0) d.rkeyMismatch = true;
    gFaults.rkeyMismatch--;
  }
  return d;
}

bool faultDropCqe() {
  std::lock_guard<std::mutex> lock(gMu);
  initLocked();
  if (gFaults.dropCq < 0) return false;
  bool drop = gFaults.dropCq == 0;
  gFaults.dropCq--;
  return drop;
}

int faultDelayCqMs() {
  std::lock_guard<std::mutex> lock(gMu);
  initLocked();
  return gFaults.delayCqMs;
}

void faultPollFile() {
  std::lock_guard<std::mutex> lock(gMu);
  initLocked();
  int64_t now = nowNs();
  if (now - gLastFileCheckNs < 50 * 1000000LL) return;
  gLastFileCheckNs = now;
  const char* file = getenv("ACCL_VERBS_EMU_FAULT_FILE");
  if (!file || !*file) return;
  if (gFile != file) {  // a new file: its first contents count as a change
    gFile = file;
    gFileSize = -1;
  }
  struct stat st;
  if (stat(gFile.c_str(), &st) != 0) return;
  if (st.st_mtim.tv_sec == gFileMtime.tv_sec && st.st_mtim.tv_nsec == gFileMtime.tv_nsec &&
      st.st_size == gFileSize)
    return;
  gFileMtime = st.st_mtim;
  gFileSize = st.st_size;
  FILE* f = fopen(gFile.c_str(), "r");
  if (!f) return;
  char buf[512] = {0};
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  Faults parsed;
  if (parse(buf, &parsed)) {
    gFaults = parsed;
    fprintf(stderr, "verbs-emu: pid %d: fault spec from %s: %s\n", getpid(), gFile.c_str(), buf);
  } else {
    fprintf(stderr, "verbs-emu: %s holds \"%s\", which does not parse; ignored\n", gFile.c_str(), buf);
  }
}

void faultSet(const char* spec) {
  std::lock_guard<std::mutex> lock(gMu);
  initLocked();
  Faults parsed;
  if (parse(spec, &parsed)) gFaults = parsed;
}

}  // namespace verbs_emu

extern "C" __attribute__((visibility("default"))) int accl_verbs_emu_set_fault(const char* spec) {
  verbs_emu::Faults parsed;
  if (!verbs_emu::parse(spec, &parsed)) return -1;
  verbs_emu::faultSet(spec);
  return 0;
}
