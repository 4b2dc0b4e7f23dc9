// main() of the mp test binaries: selects the host backend (the mp tests run without a GPU)
// before anything can read the environment, then runs gtest. A binary may be built with
// ACCL_MP_BOOTSTRAP_TIMEOUT_MS to bound bootstrap waits (tests of peers that never arrive).
// Values already in the environment win, so a run can still pick other settings.
#include <gtest/gtest.h>

#include <cstdlib>

#define ACCL_MP_STRINGIFY2(x) #x
#define ACCL_MP_STRINGIFY(x) ACCL_MP_STRINGIFY2(x)

int main(int argc, char** argv) {
  setenv("ACCL_BACKEND", "host", 0);
#ifdef ACCL_MP_BOOTSTRAP_TIMEOUT_MS
  setenv("ACCL_BOOTSTRAP_TIMEOUT_MS", ACCL_MP_STRINGIFY(ACCL_MP_BOOTSTRAP_TIMEOUT_MS), 0);
#endif
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
