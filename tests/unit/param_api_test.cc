// The ncclParam* API over the settings registry: every typed getter with its range limits,
// strings and raw bytes, sources (default, config file, environment), the key list, the
// INFO dump, and agreement with `accl-info --env` (the built tool, run as a child process).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "nccl.h"
#include "support/scoped_env.h"
#include "util/last_error.h"
#include "util/log.h"
#include "util/param_display.h"
#include "util/params.h"

namespace accl {
namespace {

// A file in /tmp removed at the end of the scope.
struct TempFile {
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/accl_param_test_XXXXXX";
    int fd = mkstemp(tmpl);
    path = tmpl;
    if (fd >= 0) {
      if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) path.clear();
      close(fd);
    }
  }
  ~TempFile() { unlink(path.c_str()); }
  std::string path;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool lastErrorHas(const std::string& needle) { return std::string(lastErrorText()).find(needle) != std::string::npos; }

ncclParamHandle_t bind(const char* key) {
  ncclParamHandle_t h = nullptr;
  EXPECT_EQ(ncclParamBind(&h, key), ncclSuccess) << key << ": " << lastErrorText();
  return h;
}

// An Int setting with no other reader in these tests, and a Str one.
constexpr const char* kIntKey = "NCCL_SOCKET_RETRY_CNT";  // default 34
constexpr const char* kStrKey = "NCCL_P2P_LEVEL";         // default ""

class ParamApiTest : public ::testing::Test {
 protected:
  void SetUp() override { setLastError(""); }
  // No config file of the user's or the machine's may supply the keys the tests use.
  test::ScopedEnvVar conf_{"NCCL_CONF_FILE", "/nonexistent/accl-param-test.conf"};
  test::ScopedEnvVar intKey_{kIntKey, nullptr};
  test::ScopedEnvVar strKey_{kStrKey, nullptr};
};

TEST_F(ParamApiTest, BindKnownKeysUnknownKeysAndNulls) {
  ncclParamHandle_t a = bind(kIntKey), b = bind(kIntKey), c = bind(kStrKey);
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b);  // one handle per setting, owned by the library
  EXPECT_NE(a, c);

  ncclParamHandle_t h = reinterpret_cast<ncclParamHandle_t>(0x1);
  EXPECT_EQ(ncclParamBind(&h, "NCCL_NO_SUCH_SETTING"), ncclInvalidArgument);
  EXPECT_EQ(h, nullptr);
  EXPECT_TRUE(lastErrorHas("NCCL_NO_SUCH_SETTING")) << lastErrorText();
  EXPECT_EQ(ncclParamBind(&h, "nccl_socket_retry_cnt"), ncclInvalidArgument);  // keys are case-sensitive
  EXPECT_EQ(ncclParamBind(&h, ""), ncclInvalidArgument);
  EXPECT_EQ(ncclParamBind(&h, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamBind(nullptr, kIntKey), ncclInvalidArgument);

  // Handles that did not come from Bind, and NULL outputs.
  int32_t v32;
  const char* s;
  int len;
  EXPECT_EQ(ncclParamGetI32(nullptr, &v32), ncclInvalidArgument);
  int fake = 0;
  EXPECT_EQ(ncclParamGetI32(reinterpret_cast<ncclParamHandle_t>(&fake), &v32), ncclInvalidArgument);
  EXPECT_TRUE(lastErrorHas("ncclParamBind")) << lastErrorText();
  EXPECT_EQ(ncclParamGetI32(a, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetU64(a, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetStr(a, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetStr(nullptr, &s), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGet(nullptr, &v32, 4, &len), ncclInvalidArgument);
}

TEST_F(ParamApiTest, DefaultValueThroughEveryGetter) {
  ncclParamHandle_t h = bind(kIntKey);
  int8_t i8 = 0; int16_t i16 = 0; int32_t i32 = 0; int64_t i64 = 0;
  uint8_t u8 = 0; uint16_t u16 = 0; uint32_t u32 = 0; uint64_t u64 = 0;
  ASSERT_EQ(ncclParamGetI8(h, &i8), ncclSuccess);
  ASSERT_EQ(ncclParamGetI16(h, &i16), ncclSuccess);
  ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
  ASSERT_EQ(ncclParamGetI64(h, &i64), ncclSuccess);
  ASSERT_EQ(ncclParamGetU8(h, &u8), ncclSuccess);
  ASSERT_EQ(ncclParamGetU16(h, &u16), ncclSuccess);
  ASSERT_EQ(ncclParamGetU32(h, &u32), ncclSuccess);
  ASSERT_EQ(ncclParamGetU64(h, &u64), ncclSuccess);
  EXPECT_EQ(i8, 34); EXPECT_EQ(i16, 34); EXPECT_EQ(i32, 34); EXPECT_EQ(i64, 34);
  EXPECT_EQ(u8, 34u); EXPECT_EQ(u16, 34u); EXPECT_EQ(u32, 34u); EXPECT_EQ(u64, 34u);
  EXPECT_STREQ(paramSource(kIntKey), "default");
}

// Which getters accept a value: bit i set = the i-th of I8 I16 I32 I64 U8 U16 U32 U64 succeeds.
struct RangeCase {
  const char* text;
  unsigned accepted;
  long long asSigned;  // expected through the widest signed getter that accepts it
};
constexpr unsigned I8 = 1, I16 = 2, I32 = 4, I64 = 8, U8 = 16, U16 = 32, U32 = 64, U64 = 128;

TEST_F(ParamApiTest, TypedGettersCheckTheirRange) {
  const RangeCase cases[] = {
      {"0", 0xff, 0},
      {"127", 0xff, 127},
      {"0x7f", 0xff, 127},  // strtoll base 0, as paramInt
      {"128", 0xff & ~I8, 128},
      {"255", 0xff & ~I8, 255},
      {"256", 0xff & ~(I8 | U8), 256},
      {"-1", I8 | I16 | I32 | I64, -1},
      {"-128", I8 | I16 | I32 | I64, -128},
      {"-129", I16 | I32 | I64, -129},
      {"32767", 0xff & ~(I8 | U8), 32767},
      {"32768", I32 | I64 | U16 | U32 | U64, 32768},
      {"65535", I32 | I64 | U16 | U32 | U64, 65535},
      {"65536", I32 | I64 | U32 | U64, 65536},
      {"-32769", I32 | I64, -32769},
      {"2147483647", I32 | I64 | U32 | U64, 2147483647LL},
      {"2147483648", I64 | U32 | U64, 2147483648LL},
      {"4294967295", I64 | U32 | U64, 4294967295LL},
      {"4294967296", I64 | U64, 4294967296LL},
      {"-2147483649", I64, -2147483649LL},
      {"9223372036854775807", I64 | U64, INT64_MAX},
      {"-9223372036854775808", I64, INT64_MIN},
      {"9223372036854775808", 0, 0},  // past int64: the library cannot read it either
      {"12abc", 0, 0},
      {"", 0, 0},
  };
  ncclParamHandle_t h = bind(kIntKey);
  for (const RangeCase& c : cases) {
    test::ScopedEnvVar env(kIntKey, c.text);
    SCOPED_TRACE(std::string("value '") + c.text + "'");
    int8_t i8; int16_t i16; int32_t i32; int64_t i64;
    uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64;
    ncclResult_t got[8] = {ncclParamGetI8(h, &i8),  ncclParamGetI16(h, &i16), ncclParamGetI32(h, &i32),
                           ncclParamGetI64(h, &i64), ncclParamGetU8(h, &u8),   ncclParamGetU16(h, &u16),
                           ncclParamGetU32(h, &u32), ncclParamGetU64(h, &u64)};
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(got[i], (c.accepted >> i) & 1 ? ncclSuccess : ncclInvalidArgument) << "getter #" << i;
    if (c.accepted & I8) EXPECT_EQ(i8, c.asSigned);
    if (c.accepted & I16) EXPECT_EQ(i16, c.asSigned);
    if (c.accepted & I32) EXPECT_EQ(i32, c.asSigned);
    if (c.accepted & I64) EXPECT_EQ(i64, c.asSigned);
    if (c.accepted & U8) EXPECT_EQ(u8, static_cast<uint64_t>(c.asSigned));
    if (c.accepted & U16) EXPECT_EQ(u16, static_cast<uint64_t>(c.asSigned));
    if (c.accepted & U32) EXPECT_EQ(u32, static_cast<uint64_t>(c.asSigned));
    if (c.accepted & U64) EXPECT_EQ(u64, static_cast<uint64_t>(c.asSigned));
  }
}

TEST_F(ParamApiTest, RangeErrorsNameTheSettingValueAndType) {
  test::ScopedEnvVar env(kIntKey, "300");
  uint8_t u8;
  ASSERT_EQ(ncclParamGetU8(bind(kIntKey), &u8), ncclInvalidArgument);
  EXPECT_TRUE(lastErrorHas("ncclParamGetU8")) << lastErrorText();
  EXPECT_TRUE(lastErrorHas(std::string(kIntKey) + " = 300 (env)")) << lastErrorText();
  EXPECT_TRUE(lastErrorHas("uint8_t")) << lastErrorText();

  test::ScopedEnvVar junk(kIntKey, "lots");
  int64_t i64;
  ASSERT_EQ(ncclParamGetI64(bind(kIntKey), &i64), ncclInvalidArgument);
  EXPECT_TRUE(lastErrorHas("'lots'")) << lastErrorText();
  EXPECT_TRUE(lastErrorHas("default 34")) << lastErrorText();
}

TEST_F(ParamApiTest, StringSettingsConvertOnlyWhenNumeric) {
  ncclParamHandle_t h = bind(kStrKey);
  const char* s = nullptr;
  int32_t i32 = -7;
  // Unset: empty text, not a number.
  ASSERT_EQ(ncclParamGetStr(h, &s), ncclSuccess);
  EXPECT_STREQ(s, "");
  EXPECT_EQ(ncclParamGetI32(h, &i32), ncclInvalidArgument);
  EXPECT_TRUE(lastErrorHas("string setting")) << lastErrorText();
  {
    test::ScopedEnvVar env(kStrKey, "NVL");
    ASSERT_EQ(ncclParamGetStr(h, &s), ncclSuccess);
    EXPECT_STREQ(s, "NVL");
    EXPECT_EQ(ncclParamGetI32(h, &i32), ncclInvalidArgument);
    EXPECT_TRUE(lastErrorHas("'NVL'")) << lastErrorText();
  }
  {
    test::ScopedEnvVar env(kStrKey, "3");  // the legacy numeric form
    ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
    EXPECT_EQ(i32, 3);
    uint16_t u16 = 0;
    ASSERT_EQ(ncclParamGetU16(h, &u16), ncclSuccess);
    EXPECT_EQ(u16, 3u);
  }
  // GetStr of an Int setting is its text, unnormalised.
  test::ScopedEnvVar env(kIntKey, "0x10");
  ASSERT_EQ(ncclParamGetStr(bind(kIntKey), &s), ncclSuccess);
  EXPECT_STREQ(s, "0x10");
}

TEST_F(ParamApiTest, StringsAreThreadLocal) {
  test::ScopedEnvVar env(kStrKey, "PIX");
  const char* mine = nullptr;
  ASSERT_EQ(ncclParamGetStr(bind(kStrKey), &mine), ncclSuccess);
  std::string other;
  std::thread([&] {
    test::ScopedEnvVar inner(kStrKey, "SYS");  // setenv is process-wide, but only this thread reads in between
    const char* theirs = nullptr;
    if (ncclParamGetStr(bind(kStrKey), &theirs) == ncclSuccess) other = theirs;
  }).join();
  EXPECT_EQ(other, "SYS");
  EXPECT_STREQ(mine, "PIX");  // untouched by the other thread's call
}

TEST_F(ParamApiTest, RawBytesOfIntAndStringSettings) {
  test::ScopedEnvVar intEnv(kIntKey, "-5000000000");
  test::ScopedEnvVar strEnv(kStrKey, "PXB");
  ncclParamHandle_t hi = bind(kIntKey), hs = bind(kStrKey);

  // Int: the int64_t value's 8 bytes.
  unsigned char buf[16];
  std::memset(buf, 0xee, sizeof(buf));
  int len = -1;
  ASSERT_EQ(ncclParamGet(hi, buf, sizeof(buf), &len), ncclSuccess);
  EXPECT_EQ(len, 8);
  int64_t v;
  std::memcpy(&v, buf, 8);
  EXPECT_EQ(v, -5000000000LL);
  EXPECT_EQ(buf[8], 0xee);  // nothing past the value

  // Size query, then too small: the bytes that fit, the full length, an error.
  len = -1;
  ASSERT_EQ(ncclParamGet(hi, nullptr, 0, &len), ncclSuccess);
  EXPECT_EQ(len, 8);
  std::memset(buf, 0xee, sizeof(buf));
  EXPECT_EQ(ncclParamGet(hi, buf, 3, &len), ncclInvalidArgument);
  EXPECT_EQ(len, 8);
  EXPECT_EQ(std::memcmp(buf, &v, 3), 0);
  EXPECT_EQ(buf[3], 0xee);
  EXPECT_TRUE(lastErrorHas("needs 8 bytes")) << lastErrorText();

  // Str: the characters and the NUL.
  char text[8];
  std::memset(text, 'x', sizeof(text));
  ASSERT_EQ(ncclParamGet(hs, text, sizeof(text), &len), ncclSuccess);
  EXPECT_EQ(len, 4);
  EXPECT_STREQ(text, "PXB");
  std::memset(text, 'x', sizeof(text));
  EXPECT_EQ(ncclParamGet(hs, text, 4, &len), ncclSuccess);  // exactly enough
  EXPECT_EQ(ncclParamGet(hs, text, 2, &len), ncclInvalidArgument);
  EXPECT_EQ(len, 4);

  // Bad arguments.
  EXPECT_EQ(ncclParamGet(hs, text, 8, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGet(hs, text, -1, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGet(hs, nullptr, 8, &len), ncclInvalidArgument);
  test::ScopedEnvVar junk(kIntKey, "many");
  EXPECT_EQ(ncclParamGet(hi, buf, sizeof(buf), &len), ncclInvalidArgument);
}

TEST_F(ParamApiTest, GetParameterByKey) {
  test::ScopedEnvVar env(kIntKey, "12");
  const char* value = nullptr;
  int len = -1;
  ASSERT_EQ(ncclParamGetParameter(kIntKey, &value, &len), ncclSuccess);
  EXPECT_STREQ(value, "12");
  EXPECT_EQ(len, 2);
  ASSERT_EQ(ncclParamGetParameter(kStrKey, &value, &len), ncclSuccess);
  EXPECT_STREQ(value, "");
  EXPECT_EQ(len, 0);

  EXPECT_EQ(ncclParamGetParameter("ACCL_NOT_A_SETTING", &value, &len), ncclInvalidArgument);
  EXPECT_EQ(value, nullptr);
  EXPECT_EQ(len, 0);
  EXPECT_TRUE(lastErrorHas("ACCL_NOT_A_SETTING")) << lastErrorText();
  EXPECT_EQ(ncclParamGetParameter(nullptr, &value, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetParameter(kIntKey, nullptr, &len), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetParameter(kIntKey, &value, nullptr), ncclInvalidArgument);
}

TEST_F(ParamApiTest, SourcesDefaultConfAndEnv) {
  TempFile conf(std::string("# test settings\n") + kIntKey + " = 7\n" + kStrKey + "=PHB\n");
  ASSERT_FALSE(conf.path.empty());
  const char* value;
  int len;
  int32_t i32;
  ncclParamHandle_t h = bind(kIntKey);
  ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
  EXPECT_EQ(i32, 34);
  EXPECT_STREQ(paramSource(kIntKey), "default");
  {
    test::ScopedEnvVar useConf("NCCL_CONF_FILE", conf.path.c_str());
    ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
    EXPECT_EQ(i32, 7);
    EXPECT_STREQ(paramSource(kIntKey), "conf");
    ASSERT_EQ(ncclParamGetParameter(kStrKey, &value, &len), ncclSuccess);
    EXPECT_STREQ(value, "PHB");
    {
      test::ScopedEnvVar env(kIntKey, "9");  // the environment wins over the file
      ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
      EXPECT_EQ(i32, 9);
      EXPECT_STREQ(paramSource(kIntKey), "env");
    }
    ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
    EXPECT_EQ(i32, 7);
  }
  ASSERT_EQ(ncclParamGetI32(h, &i32), ncclSuccess);
  EXPECT_EQ(i32, 34);
}

TEST_F(ParamApiTest, AllKeysAreEveryDeclaredSetting) {
  const char** table = nullptr;
  int n = -1;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&table, &n), ncclSuccess);
  ASSERT_EQ(n, static_cast<int>(allParams().size()));
  std::set<std::string> keys;
  for (int i = 0; i < n; ++i) {
    keys.insert(table[i]);
    ncclParamHandle_t h;
    EXPECT_EQ(ncclParamBind(&h, table[i]), ncclSuccess) << table[i];
    const char* s;
    EXPECT_EQ(ncclParamGetStr(h, &s), ncclSuccess) << table[i];
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(n));  // no duplicates
  for (const char* k : {"NCCL_DEBUG", "ACCL_BACKEND", "NCCL_ALGO", "ACCL_TIMEOUT_MS", "NCCL_PARAM_DUMP_ALL"})
    EXPECT_TRUE(keys.count(k)) << k;
  {
    test::ScopedEnvVar all("NCCL_PARAM_DUMP_ALL", "true");  // accepted, changes nothing
    int n2 = -1;
    ASSERT_EQ(ncclParamGetAllParameterKeys(&table, &n2), ncclSuccess);
    EXPECT_EQ(n2, n);
  }
  EXPECT_EQ(ncclParamGetAllParameterKeys(nullptr, &n), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetAllParameterKeys(&table, nullptr), ncclInvalidArgument);
}

TEST_F(ParamApiTest, DumpAllLogsKeyValueAndSource) {
  TempFile conf(std::string(kStrKey) + "=PHB\n");
  TempFile log("");
  {
    test::ScopedEnvVar useConf("NCCL_CONF_FILE", conf.path.c_str());
    test::ScopedEnvVar env(kIntKey, "21");
    test::ScopedEnvVar level("NCCL_DEBUG", "INFO");
    test::ScopedEnvVar subsys("NCCL_DEBUG_SUBSYS", "ENV");
    test::ScopedEnvVar file("NCCL_DEBUG_FILE", log.path.c_str());
    resetLogSettings();
    ncclParamDumpAll();
    resetLogSettings();  // closes the file
  }
  resetLogSettings();
  std::string text = readFile(log.path);
  EXPECT_NE(text.find(std::string(kIntKey) + "=21 (env, int)"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string(kStrKey) + "=PHB (conf, string)"), std::string::npos) << text;
  EXPECT_NE(text.find("ACCL_HOST_SPIN=-1 (default, int)"), std::string::npos) << text;
  EXPECT_NE(text.find("NCCL INFO"), std::string::npos) << text;
}

// Every key's value and source as the API sees them equals the row `accl-info --env` prints
// (its own format: "%-40s %-8s %-20s meaning"), and the tool lists no other rows.
TEST_F(ParamApiTest, AgreesWithAcclInfoEnv) {
  TempFile conf(std::string(kStrKey) + "=PHB\n");
  test::ScopedEnvVar useConf("NCCL_CONF_FILE", conf.path.c_str());
  test::ScopedEnvVar env(kIntKey, "17");
  std::string out;
  {
    FILE* p = popen(ACCL_TEST_ACCL_INFO " --env 2>/dev/null", "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ASSERT_EQ(pclose(p), 0) << out;
  }
  size_t header = out.find("\nVARIABLE ");
  ASSERT_NE(header, std::string::npos) << out;
  std::istringstream rows(out.substr(out.find('\n', header + 1) + 1));
  std::set<std::string> toolRows;
  for (std::string line; std::getline(rows, line);) toolRows.insert(line);

  const char** table = nullptr;
  int n = 0;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&table, &n), ncclSuccess);
  EXPECT_EQ(toolRows.size(), static_cast<size_t>(n));
  int matched = 0;
  for (int i = 0; i < n; ++i) {
    const char* value = nullptr;
    int len = 0;
    ASSERT_EQ(ncclParamGetParameter(table[i], &value, &len), ncclSuccess);
    char prefix[512];
    // The tool shows the API's text, or for an unset setting "unset (...)" (util/param_display.h).
    const ParamInfo* info = findParamInfo(table[i]);
    ASSERT_NE(info, nullptr) << table[i];
    std::string shown = paramDisplayValue(*info, ParamValue{std::string(value, len), paramSource(table[i])});
    std::snprintf(prefix, sizeof(prefix), "%-40s %-8s %-20s ", table[i], paramSource(table[i]), shown.c_str());
    bool found = false;
    for (const std::string& row : toolRows) found = found || row.rfind(prefix, 0) == 0;
    EXPECT_TRUE(found) << "no accl-info row starts with '" << prefix << "'";
    matched += found;
  }
  EXPECT_EQ(matched, n);
  // The two values this test set, seen by both.
  EXPECT_NE(out.find(std::string(kIntKey)), std::string::npos);
  char want[128];
  std::snprintf(want, sizeof(want), "%-40s %-8s %-20s ", kStrKey, "conf", "PHB");
  EXPECT_NE(out.find(want), std::string::npos) << out;
}

}  // namespace
}  // namespace accl
