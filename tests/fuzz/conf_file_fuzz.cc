// Fuzz target: the NCCL config-file reader (util/params.cc, the file named by NCCL_CONF_FILE, also
// ~/.nccl.conf and /etc/nccl.conf). Input: the file's bytes. Each input is written to a file that
// NCCL_CONF_FILE names, and every declared setting is read back through
// paramValue / paramInt / paramStr, as the library reads them.
// Property, for inputs made of text lines shorter than the reader's 1023-byte line buffer (longer
// lines are split by design): each setting's value equals an independent model of the format,
// "KEY=VALUE" per line, '#' starts a comment, blanks around key and value trimmed, first occurrence
// wins.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "fuzz_target.h"
#include "util/params.h"

using namespace accl;

namespace {

std::string gDir;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The model: returns false when the input is outside the modelled subset.
bool modelParse(const std::string& text, std::map<std::string, std::string>* out) {
  if (text.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string line = text.substr(start, end - start);
    start = end;
    if (line.size() >= 1023) return false;
    line = line.substr(0, line.find('#'));
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (!key.empty()) out->emplace(key, value);  // first wins
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Settings must come from the file: drop the environment's (and any env plugin), except the
  // logger's, pinned so that a fuzzed NCCL_DEBUG_FILE line never makes the logger create files.
  for (const ParamInfo& p : allParams()) unsetenv(p.name);
  unsetenv("NCCL_ENV_PLUGIN");
  setenv("NCCL_DEBUG", "NONE", 1);
  setenv("NCCL_DEBUG_FILE", "/dev/null", 1);
  const char* tmp = std::getenv("TMPDIR");
  char pattern[4096];
  std::snprintf(pattern, sizeof(pattern), "%s/accl-conf-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  FUZZ_CHECK(mkdtemp(pattern) != nullptr);
  gDir = pattern;
  std::atexit([] {
    unlink((gDir + "/nccl.conf").c_str());
    rmdir(gDir.c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader re-reads only when NCCL_CONF_FILE changes: each input goes to `input`, and the run
  // ends by switching to `none` (absent), which also frees the input's settings, so that allocations
  // balance within a run (libFuzzer runs a costly leak check after any run that does not).
  const std::string path = gDir + "/nccl.conf", none = gDir + "/none";
  FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  if (size > 0) FUZZ_CHECK(std::fwrite(data, 1, size, f) == size);
  std::fclose(f);
  setenv("NCCL_CONF_FILE", path.c_str(), 1);

  std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> model;
  bool modelled = modelParse(text, &model);
  for (const ParamInfo& p : allParams()) {
    ParamValue v = paramValue(p);
    auto it = model.find(p.name);
    if (modelled && it != model.end() && std::getenv(p.name) == nullptr) {
      FUZZ_CHECK(std::strcmp(v.source, "conf") == 0);
      FUZZ_CHECK(v.text == it->second);
    }
    if (p.kind == ParamKind::Int) {
      (void)paramInt(p.name);
    } else {
      FUZZ_CHECK(paramStr(p.name) == v.text);
    }
  }
  unlink(path.c_str());
  setenv("NCCL_CONF_FILE", none.c_str(), 1);
  for (const ParamInfo& p : allParams())  // any setting the environment does not decide
    if (std::getenv(p.name) == nullptr) {
      (void)paramValue(p);
      break;
    }
  return 0;
}
