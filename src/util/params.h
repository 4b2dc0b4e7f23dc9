// Access to the settings registry (util/param_list.h): each variable's value comes from the
// environment, else from the NCCL_CONF_FILE / ~/.nccl.conf / /etc/nccl.conf defaults, else the
// registry default. When an NCCL env plugin is loaded (NCCL_ENV_PLUGIN, util/env_plugin.h) it
// replaces the environment and the config files, as in NCCL: its value, else the default.
// Values are read on every call (cheap), so tests may change them between communicators; the
// config files are read once per process and NCCL_CONF_FILE / HOME value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accl {

enum class ParamKind { Int, Str };

struct ParamInfo {
  const char* name;
  ParamKind kind;
  const char* defaultValue;
  const char* help;
};

// Every declared variable, in declaration order.
const std::vector<ParamInfo>& allParams();

// The declared variable called `name`, or nullptr. Silent: for names that come from users
// (ncclParamBind); the readers below treat an undeclared name as a bug and say so.
const ParamInfo* findParamInfo(const char* name);

// A variable's current text and where it comes from: "env", "conf", "plugin" or "default".
struct ParamValue {
  std::string text;
  const char* source;
};
ParamValue paramValue(const ParamInfo& p);

// Parses text the way paramInt does (strtoll base 0, the whole string, no overflow).
bool parseParamInt(const char* text, int64_t* out);

// Integer value (strtoll base 0). An unparsable value logs once and yields the default.
int64_t paramInt(const char* name);

// String value; empty when neither set nor defaulted.
std::string paramStr(const char* name);

// Where the current value comes from: "env", "conf", "plugin" or "default".
const char* paramSource(const char* name);

}  // namespace accl
