// Access to the settings registry (util/param_list.h): each variable's value comes from the
// environment, else from the NCCL_CONF_FILE / ~/.nccl.conf / /etc/nccl.conf defaults, else the
// registry default. Values are read on every call (cheap), so tests may change them between
// communicators; the config files are read once per process.
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

// Integer value (strtoll base 0). An unparsable value logs once and yields the default.
int64_t paramInt(const char* name);

// String value; empty when neither set nor defaulted.
std::string paramStr(const char* name);

// Where the current value comes from: "env", "conf" or "default".
const char* paramSource(const char* name);

}  // namespace accl
