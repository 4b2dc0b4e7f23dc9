// How a setting's value is shown to people — `accl-info --env` and ncclParamDumpAll's log lines —
// as opposed to the raw text programs read through paramStr / the ncclParam* API.
//
// A setting is "unset" when its text is empty, or when it is left at an Int default below zero:
// in util/param_list.h a negative Int default is a marker for "not set, decided at run time"
// (INT_MIN for the ncclConfig_t overrides, -1 / -2 for automatic choices), never a value. An unset
// setting shows as "unset", followed in parentheses by what applies then, where that is known:
// NCCL's default (and the host backend's, when it differs), "auto: ..." for a run-time choice, or
// the ncclConfig_t field for the config overrides.
#pragma once

#include <string>

#include "util/params.h"

namespace accl {

// The value as shown: v.text, or "unset" / "unset (what applies)".
std::string paramDisplayValue(const ParamInfo& p, const ParamValue& v);

// True when `v` leaves the setting unset (see above).
bool paramIsUnset(const ParamInfo& p, const ParamValue& v);

}  // namespace accl
