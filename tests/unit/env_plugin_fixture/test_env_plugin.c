/* An NCCL env plugin for env_plugin_test.cc, written against accl's reading of NCCL's env plugin
 * ABI (declared again here so the fixture depends on no header). Built twice by
 * tests/unit/CMakeLists.txt: FIXTURE_VERSION=2 exports ncclEnvPlugin_v2 (init gets a logger),
 * FIXTURE_VERSION=1 exports ncclEnvPlugin_v1.
 *
 * getEnv knows two settings: NCCL_SOCKET_RETRY_CNT ("77" for v2, "66" for v1) and NCCL_P2P_LEVEL
 * ("NVL"); anything else is NULL. init fails when ACCL_TEST_ENV_FAIL_INIT is set in the real
 * environment, and records the version it was given; init, finalize and getEnv calls are
 * counted in exported variables the test reads with dlsym. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int result_t; /* ncclResult_t: ncclSuccess 0, ncclInternalError 3 */
#define OK 0
#define INTERNAL_ERROR 3
#define EXPORT __attribute__((visibility("default")))

typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

EXPORT int accl_env_fixture_init_calls = 0;
EXPORT int accl_env_fixture_finalize_calls = 0;
EXPORT int accl_env_fixture_getenv_calls = 0;
EXPORT int accl_env_fixture_version_seen = 0; /* major * 10000 + minor * 100 + patch */

static result_t initCommon(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  accl_env_fixture_init_calls++;
  accl_env_fixture_version_seen = major * 10000 + minor * 100 + patch;
  if (!suffix) return INTERNAL_ERROR;
  if (getenv("ACCL_TEST_ENV_FAIL_INIT")) return INTERNAL_ERROR;
  return OK;
}

static result_t finalizeFixture(void) {
  accl_env_fixture_finalize_calls++;
  return OK;
}

static const char* getEnvFixture(const char* name) {
  accl_env_fixture_getenv_calls++;
  if (!name) return NULL;
  if (strcmp(name, "NCCL_SOCKET_RETRY_CNT") == 0) return FIXTURE_VERSION == 2 ? "77" : "66";
  if (strcmp(name, "NCCL_P2P_LEVEL") == 0) return "NVL";
  return NULL;
}

#if FIXTURE_VERSION == 2

static result_t initV2(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix, logger_t logger) {
  result_t res = initCommon(major, minor, patch, suffix);
  /* An INFO line from inside init must not deadlock the library reading its log settings. */
  if (logger) logger(3, 0x80, __FILE__, __LINE__, "fixture env plugin v2: init %d", (int)res);
  return res;
}

typedef struct {
  const char* name;
  result_t (*init)(uint8_t, uint8_t, uint8_t, const char*, logger_t);
  result_t (*finalize)(void);
  const char* (*getEnv)(const char*);
} env_v2_t;

EXPORT const env_v2_t ncclEnvPlugin_v2 = {"fixture-env-v2", initV2, finalizeFixture, getEnvFixture};

#elif FIXTURE_VERSION == 1

typedef struct {
  const char* name;
  result_t (*init)(uint8_t, uint8_t, uint8_t, const char*);
  result_t (*finalize)(void);
  const char* (*getEnv)(const char*);
} env_v1_t;

EXPORT const env_v1_t ncclEnvPlugin_v1 = {"fixture-env-v1", initCommon, finalizeFixture, getEnvFixture};

#else
#error "FIXTURE_VERSION must be 2 or 1"
#endif
