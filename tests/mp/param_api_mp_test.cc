// The ncclParam* API through the shared library while communicators run, as threads and as
// processes, 1..16 ranks: every rank reads back the settings the launching process set (typed,
// as text and as raw bytes), the backend the mp binaries select, and every key by name.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mp/mp_test_util.h"

namespace accl::test {
namespace {

class ParamApiMpTest : public MpTest {
 protected:
  void SetUp() override {
    setenv("ACCL_TIMEOUT_MS", "654321", 1);  // inherited by forked ranks and seen by threads
    setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  }
  void TearDown() override {
    unsetenv("ACCL_TIMEOUT_MS");
    unsetenv("NCCL_SOCKET_FAMILY");
  }
};

TEST_P(ParamApiMpTest, RanksReadSettingsBack) {
  LaunchResult res = launchRanks(options(), [](RankContext& ctx) {
    ncclComm_t comm;
    if (!initComm(ctx, &comm)) return;
    ncclParamHandle_t timeout = nullptr, family = nullptr, backend = nullptr;
    RANK_NCCL_OK(ctx, ncclParamBind(&timeout, "ACCL_TIMEOUT_MS"));
    RANK_NCCL_OK(ctx, ncclParamBind(&family, "NCCL_SOCKET_FAMILY"));
    RANK_NCCL_OK(ctx, ncclParamBind(&backend, "ACCL_BACKEND"));
    int64_t i64 = 0;
    uint32_t u32 = 0;
    int16_t i16 = 0;
    if (RANK_NCCL_OK(ctx, ncclParamGetI64(timeout, &i64))) RANK_CHECK(ctx, i64 == 654321);
    if (RANK_NCCL_OK(ctx, ncclParamGetU32(timeout, &u32))) RANK_CHECK(ctx, u32 == 654321u);
    RANK_NCCL_EXPECT(ctx, ncclParamGetI16(timeout, &i16), ncclInvalidArgument);  // 654321 > 32767
    const char* text = nullptr;
    if (RANK_NCCL_OK(ctx, ncclParamGetStr(family, &text))) RANK_CHECK(ctx, std::strcmp(text, "AF_INET") == 0);
    if (RANK_NCCL_OK(ctx, ncclParamGetStr(backend, &text))) RANK_CHECK(ctx, std::strcmp(text, "host") == 0);
    RANK_NCCL_EXPECT(ctx, ncclParamGetI32(family, reinterpret_cast<int32_t*>(&u32)), ncclInvalidArgument);
    char raw[16] = {};
    int len = 0;
    if (RANK_NCCL_OK(ctx, ncclParamGet(timeout, raw, sizeof(raw), &len))) {
      std::memcpy(&i64, raw, sizeof(i64));
      RANK_CHECK(ctx, len == 8 && i64 == 654321);
    }
    if (RANK_NCCL_OK(ctx, ncclParamGet(family, raw, sizeof(raw), &len)))
      RANK_CHECK(ctx, len == 8 && std::strcmp(raw, "AF_INET") == 0);
    // Every key can be read by name; the two set above read back as set.
    const char** keys = nullptr;
    int n = 0;
    if (RANK_NCCL_OK(ctx, ncclParamGetAllParameterKeys(&keys, &n))) {
      ctx.check(n > 40, "rank %d: only %d keys", ctx.rank, n);
      int seen = 0;
      for (int i = 0; i < n; ++i) {
        const char* value = nullptr;
        int valueLen = -1;
        if (!RANK_NCCL_OK(ctx, ncclParamGetParameter(keys[i], &value, &valueLen))) continue;
        RANK_CHECK(ctx, value != nullptr && static_cast<int>(std::strlen(value)) == valueLen);
        if (std::strcmp(keys[i], "ACCL_TIMEOUT_MS") == 0) seen += std::strcmp(value, "654321") == 0;
        if (std::strcmp(keys[i], "NCCL_SOCKET_FAMILY") == 0) seen += std::strcmp(value, "AF_INET") == 0;
      }
      ctx.check(seen == 2, "rank %d: %d of the 2 set keys read back", ctx.rank, seen);
    }
    RANK_NCCL_OK(ctx, ctx.destroyComm(comm));
  });
  EXPECT_RANKS_OK(res);
}

ACCL_MP_INSTANTIATE(ParamApiMpTest);

}  // namespace
}  // namespace accl::test
