// paramDisplayValue (see param_display.h): "unset" and what applies then, per setting.
#include "util/param_display.h"

#include <cstdlib>
#include <cstring>

namespace accl {
namespace {

// What applies when the setting is not set, for the settings whose marker default says nothing
// by itself. Sizes and counts are NCCL's defaults (nccl-internals.md §4); the host backend's
// own come from core/engine/connections.cc and backend/host/host_wait.cc.
struct UnsetMeaning {
  const char* name;
  const char* meaning;
};
constexpr UnsetMeaning kUnsetMeanings[] = {
    {"ACCL_BACKEND", "auto: cuda when built with CUDA and a GPU is visible, else host"},
    {"NCCL_BUFFSIZE", "NCCL default: 4 MiB; host backend: 1 MiB, 4 MiB across hosts"},
    {"NCCL_LL_BUFFSIZE", "NCCL default: 512 KiB; host backend: 256 KiB"},
    {"NCCL_LL128_BUFFSIZE", "NCCL default: 4800 KiB; host backend: no LL128 slots"},
    {"NCCL_NTHREADS", "NCCL default: 512"},
    {"NCCL_LL128_NTHREADS", "NCCL default: 640"},
    {"NCCL_NET_OVERHEAD", "auto: 1000 ns on Intel CPUs, 2000 ns on AMD"},
    {"NCCL_SOCKET_NTHREADS", "auto: 0, the proxy thread moves the data; 2 on AWS, 4 on GCP NICs"},
    {"NCCL_NSOCKS_PERTHREAD", "auto: 1; 8 on AWS NICs"},
    {"NCCL_IB_GID_INDEX", "auto: the first GID of NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM"},
    {"NCCL_IB_SL", "the connection's traffic class, else 0"},
    {"NCCL_IB_TC", "the connection's traffic class, else 0"},
    {"ACCL_HOST_SPIN", "auto: 50 polls, 10 when oversubscribed"},
    {"ACCL_HOST_YIELD_US", "auto: 200 us, 5000 us when oversubscribed"},
    {"NCCL_ALGO", "all"},
    {"NCCL_PROTO", "all"},
};

constexpr const char* kConfigUnsetDefault = "-2147483648";  // NCCL_CONFIG_UNDEF_INT

}  // namespace

bool paramIsUnset(const ParamInfo& p, const ParamValue& v) {
  if (v.text.empty()) return true;
  if (p.kind != ParamKind::Int || std::strcmp(v.source, "default") != 0) return false;
  return std::strtoll(p.defaultValue, nullptr, 0) < 0;
}

std::string paramDisplayValue(const ParamInfo& p, const ParamValue& v) {
  if (!paramIsUnset(p, v)) return v.text;
  for (const UnsetMeaning& m : kUnsetMeanings)
    if (std::strcmp(m.name, p.name) == 0) return std::string("unset (") + m.meaning + ")";
  if (p.kind == ParamKind::Int && std::strcmp(p.defaultValue, kConfigUnsetDefault) == 0)
    return "unset (ncclConfig_t decides)";
  if (p.kind == ParamKind::Int) return "unset (auto)";
  return "unset";
}

}  // namespace accl
