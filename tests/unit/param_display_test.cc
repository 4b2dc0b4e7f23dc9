// paramDisplayValue (util/param_display.h): how accl-info --env and ncclParamDumpAll show a
// setting — "unset (...)" for marker defaults, the text itself once the setting is set.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "support/scoped_env.h"
#include "util/param_display.h"
#include "util/params.h"

namespace accl {
namespace {

std::string shown(const char* name) {
  const ParamInfo* p = findParamInfo(name);
  EXPECT_NE(p, nullptr) << name;
  return p ? paramDisplayValue(*p, paramValue(*p)) : std::string();
}

TEST(ParamDisplay, UnsetSettingsNeverShowTheirMarkerDefault) {
  test::ScopedEnvVar noConf("NCCL_CONF_FILE", "/nonexistent/accl-param-display.conf");
  for (const ParamInfo& p : allParams()) {
    test::ScopedEnvVar unset(p.name, nullptr);
    ParamValue v = paramValue(p);
    if (std::strcmp(v.source, "default") != 0) continue;  // /etc/nccl.conf or a plugin on this machine
    const std::string text = paramDisplayValue(p, v);
    EXPECT_NE(text, "-2147483648") << p.name;
    EXPECT_NE(text, "-1") << p.name;
    EXPECT_NE(text, "-2") << p.name;
    EXPECT_FALSE(text.empty()) << p.name;
    if (paramIsUnset(p, v)) EXPECT_EQ(text.rfind("unset", 0), 0u) << p.name << ": " << text;
  }
}

TEST(ParamDisplay, UnsetShowsWhatApplies) {
  test::ScopedEnvVar noConf("NCCL_CONF_FILE", "/nonexistent/accl-param-display.conf");
  test::ScopedEnvVar a("NCCL_BUFFSIZE", nullptr), b("NCCL_COMM_BLOCKING", nullptr), c("ACCL_HOST_SPIN", nullptr),
      d("NCCL_COMM_ID", nullptr), e("NCCL_NTHREADS", nullptr);
  EXPECT_EQ(shown("NCCL_BUFFSIZE"), "unset (NCCL default: 4 MiB; host backend: 1 MiB, 4 MiB across hosts)");
  EXPECT_EQ(shown("NCCL_NTHREADS"), "unset (NCCL default: 512)");
  EXPECT_EQ(shown("NCCL_COMM_BLOCKING"), "unset (ncclConfig_t decides)");
  EXPECT_EQ(shown("ACCL_HOST_SPIN").rfind("unset (auto: ", 0), 0u) << shown("ACCL_HOST_SPIN");
  EXPECT_EQ(shown("NCCL_COMM_ID"), "unset");
}

TEST(ParamDisplay, SetValuesShowAsGivenEvenWhenTheyEqualTheMarker) {
  test::ScopedEnvVar a("NCCL_BUFFSIZE", "8388608"), b("NCCL_NTHREADS", "-2"), c("NCCL_COMM_ID", "");
  EXPECT_EQ(shown("NCCL_BUFFSIZE"), "8388608");
  EXPECT_EQ(shown("NCCL_NTHREADS"), "-2");   // set in the environment: shown as given
  EXPECT_EQ(shown("NCCL_COMM_ID"), "unset");  // an empty string reads as unset everywhere
}

TEST(ParamDisplay, AlgoHelpListsAcclsOneShot) {
  const ParamInfo* p = findParamInfo("NCCL_ALGO");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(std::string(p->help).find("OneShot (accl"), std::string::npos) << p->help;
  for (const char* name : {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"})
    EXPECT_NE(std::string(p->help).find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace accl
