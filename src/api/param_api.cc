// The ncclParam* entry points: accl's settings registry (util/param_list.h) read by key, the
// same values and sources `accl-info --env` prints.
//
// What accl decides where NCCL leaves room (NCCL's settings are typed; accl's are Int or Str):
// - Handles: one per declared setting, owned by the library, valid for the whole process.
// - Typed getters (I8..U64) read the value fresh (environment, config file or env plugin, else
//   the default), parse it as paramInt does (strtoll base 0) and fail with ncclInvalidArgument
//   when the text is not a number (any Str setting that is not numeric, or an Int setting set to
//   junk, which the library itself replaces by its default) or does not fit the type (range,
//   negative into unsigned).
// - GetStr / GetParameter: the text as accl-info shows it ("" for an unset string setting), in
//   thread_local storage valid until the same call again on the same thread.
// - ncclParamGet: an Int setting is its int64_t value (8 bytes, host byte order); a Str setting is
//   its characters plus the terminating NUL (as NCCL). *len = the full size. When maxLen is too
//   small the first maxLen bytes are copied, *len still says the full size, and the call returns
//   ncclInvalidArgument; out = NULL with maxLen = 0 asks only for the size (ncclSuccess).
// - GetAllParameterKeys and DumpAll cover every declared setting: accl has no undocumented ones,
//   so NCCL_PARAM_DUMP_ALL changes nothing. DumpAll writes "KEY=VALUE (source, int|string)"
//   INFO lines (subsystem ENV), followed for an unset setting by ": unset (...)" as accl-info
//   --env shows it (util/param_display.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api/api_export.h"
#include "api/api_guard.h"
#include "util/log.h"
#include "util/param_display.h"
#include "util/params.h"

// The public ncclParamHandle_t points to one of these.
struct ncclParamHandle {
  const accl::ParamInfo* info;
};

namespace accl {
namespace {

const std::vector<ncclParamHandle>& handles() {
  static const std::vector<ncclParamHandle> all = [] {
    std::vector<ncclParamHandle> v;
    for (const ParamInfo& p : allParams()) v.push_back({&p});
    return v;
  }();
  return all;
}

// Checks that h is one of ours (a handle from ncclParamBind).
ncclResult_t checkHandle(const char* call, ncclParamHandle_t h) {
  const auto& all = handles();
  if (h == nullptr) return fail(ncclInvalidArgument, "%s: handle is NULL", call);
  if (h < all.data() || h >= all.data() + all.size())
    return fail(ncclInvalidArgument, "%s: handle %p did not come from ncclParamBind", call, (void*)h);
  return ncclSuccess;
}

// The setting's current value as an int64, or an error naming the setting, text and source.
ncclResult_t currentInt(const char* call, const ParamInfo& p, int64_t* out) {
  ParamValue v = paramValue(p);
  if (parseParamInt(v.text.c_str(), out)) return ncclSuccess;
  if (p.kind == ParamKind::Int)
    return fail(ncclInvalidArgument, "%s: %s = '%s' (%s) is not a number (the library uses the default %s)", call,
                p.name, v.text.c_str(), v.source, p.defaultValue);
  return fail(ncclInvalidArgument, "%s: %s = '%s' (%s) is a string setting whose value is not a number", call,
              p.name, v.text.c_str(), v.source);
}

template <class T>
ncclResult_t getTyped(const char* call, const char* typeName, ncclParamHandle_t h, T* out) {
  ACCL_CHECK(checkHandle(call, h));
  if (out == nullptr) return fail(ncclInvalidArgument, "%s: out is NULL (%s)", call, h->info->name);
  int64_t v = 0;
  ACCL_CHECK(currentInt(call, *h->info, &v));
  if (!std::in_range<T>(v))
    return fail(ncclInvalidArgument, "%s: %s = %lld (%s) does not fit in %s", call, h->info->name, (long long)v,
                paramSource(h->info->name), typeName);
  *out = static_cast<T>(v);
  return ncclSuccess;
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  return apiGuard("ncclParamBind", [&]() -> ncclResult_t {
    if (out == nullptr) return fail(ncclInvalidArgument, "ncclParamBind: out is NULL");
    *out = nullptr;
    if (key == nullptr) return fail(ncclInvalidArgument, "ncclParamBind: key is NULL");
    const ParamInfo* p = findParamInfo(key);
    if (p == nullptr)
      return fail(ncclInvalidArgument, "ncclParamBind: key '%s' is not a setting accl declares (accl-info --env "
                                       "lists them)", key);
    *out = const_cast<ncclParamHandle*>(&handles()[p - allParams().data()]);
    return ncclSuccess;
  });
}

#define ACCL_PARAM_TYPED_GETTER(suffix, ctype)                                   \
  ACCL_API(ncclResult_t, ncclParamGet##suffix, ncclParamHandle_t h, ctype* out) { \
    return apiGuard("ncclParamGet" #suffix,                                       \
                    [&] { return getTyped("ncclParamGet" #suffix, #ctype, h, out); }); \
  }
ACCL_PARAM_TYPED_GETTER(I8, int8_t)
ACCL_PARAM_TYPED_GETTER(I16, int16_t)
ACCL_PARAM_TYPED_GETTER(I32, int32_t)
ACCL_PARAM_TYPED_GETTER(I64, int64_t)
ACCL_PARAM_TYPED_GETTER(U8, uint8_t)
ACCL_PARAM_TYPED_GETTER(U16, uint16_t)
ACCL_PARAM_TYPED_GETTER(U32, uint32_t)
ACCL_PARAM_TYPED_GETTER(U64, uint64_t)
#undef ACCL_PARAM_TYPED_GETTER

ACCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  return apiGuard("ncclParamGetStr", [&]() -> ncclResult_t {
    ACCL_CHECK(checkHandle("ncclParamGetStr", h));
    if (out == nullptr) return fail(ncclInvalidArgument, "ncclParamGetStr: out is NULL (%s)", h->info->name);
    static thread_local std::string text;
    text = paramValue(*h->info).text;
    *out = text.c_str();
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  return apiGuard("ncclParamGet", [&]() -> ncclResult_t {
    ACCL_CHECK(checkHandle("ncclParamGet", h));
    const ParamInfo& p = *h->info;
    if (len == nullptr) return fail(ncclInvalidArgument, "ncclParamGet: len is NULL (%s)", p.name);
    if (maxLen < 0) return fail(ncclInvalidArgument, "ncclParamGet: maxLen = %d is negative (%s)", maxLen, p.name);
    if (out == nullptr && maxLen > 0)
      return fail(ncclInvalidArgument, "ncclParamGet: out is NULL with maxLen = %d (%s)", maxLen, p.name);
    std::string bytes;
    if (p.kind == ParamKind::Int) {
      int64_t v = 0;
      ACCL_CHECK(currentInt("ncclParamGet", p, &v));
      bytes.assign(reinterpret_cast<const char*>(&v), sizeof(v));
    } else {
      bytes = paramValue(p).text;
      bytes.push_back('\0');
    }
    *len = static_cast<int>(bytes.size());
    if (out == nullptr) return ncclSuccess;  // size query
    std::memcpy(out, bytes.data(), std::min<size_t>(bytes.size(), static_cast<size_t>(maxLen)));
    if (bytes.size() > static_cast<size_t>(maxLen))
      return fail(ncclInvalidArgument, "ncclParamGet: %s needs %zu bytes, maxLen = %d (the first %d were copied)",
                  p.name, bytes.size(), maxLen, maxLen);
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen) {
  return apiGuard("ncclParamGetParameter", [&]() -> ncclResult_t {
    if (value == nullptr || valueLen == nullptr)
      return fail(ncclInvalidArgument, "ncclParamGetParameter: %s is NULL", value == nullptr ? "value" : "valueLen");
    *value = nullptr;
    *valueLen = 0;
    if (key == nullptr) return fail(ncclInvalidArgument, "ncclParamGetParameter: key is NULL");
    const ParamInfo* p = findParamInfo(key);
    if (p == nullptr)
      return fail(ncclInvalidArgument, "ncclParamGetParameter: key '%s' is not a setting accl declares", key);
    static thread_local std::string text;
    text = paramValue(*p).text;
    *value = text.c_str();
    *valueLen = static_cast<int>(text.size());
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen) {
  return apiGuard("ncclParamGetAllParameterKeys", [&]() -> ncclResult_t {
    if (table == nullptr || tableLen == nullptr)
      return fail(ncclInvalidArgument, "ncclParamGetAllParameterKeys: %s is NULL",
                  table == nullptr ? "table" : "tableLen");
    static thread_local std::vector<const char*> keys;  // the names themselves are static strings
    keys.clear();
    for (const ParamInfo& p : allParams()) keys.push_back(p.name);
    *table = keys.data();
    *tableLen = static_cast<int>(keys.size());
    return ncclSuccess;
  });
}

ACCL_API(void, ncclParamDumpAll) {
  apiGuard("ncclParamDumpAll", []() -> ncclResult_t {
    ACCL_INFO(ACCL_LOG_ENV, "ncclParamDumpAll: %zu settings", allParams().size());
    for (const ParamInfo& p : allParams()) {
      ParamValue v = paramValue(p);
      // The raw value first (what the getters return), then accl-info's reading of an unset one.
      std::string shown = paramIsUnset(p, v) ? ": " + paramDisplayValue(p, v) : std::string();
      ACCL_INFO(ACCL_LOG_ENV, "%s=%s (%s, %s)%s", p.name, v.text.c_str(), v.source,
                p.kind == ParamKind::Int ? "int" : "string", shown.c_str());
    }
    return ncclSuccess;
  });
}
